package load

import (
	"cmp"
	"slices"
	"time"

	"github.com/xds-workbench/lab/shared/xdslog"
)

// Summarize counts the responses sent in [from, to), every one, into the traffic
// summary xds.log records (xdslog.Traffic; the caller names the protocol and the
// connections). flags gives Envoy's response flag per request ID (from its access log;
// nil when there is none, or for a request Envoy never logged).
func Summarize(rs []Response, from, to time.Time, asked float64, flags map[string]string) xdslog.Traffic {
	s := xdslog.Traffic{ByBackend: map[string]int{}, Failures: map[string]int{}, AskedRate: asked}
	var lat []time.Duration
	for _, r := range rs {
		if r.Sent.Before(from) || !r.Sent.Before(to) {
			continue
		}
		s.Requests++
		lat = append(lat, r.Latency)
		if r.Status >= 200 && r.Status < 300 {
			s.OK++
			s.ByBackend[r.Backend]++
			continue
		}
		s.Failures[failureKey(r, flags[r.ID])]++
	}
	if d := to.Sub(from).Seconds(); d > 0 {
		s.AchievedRate = float64(s.Requests) / d
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		s.P50MS = ms(percentile(lat, 0.50))
		s.P99MS = ms(percentile(lat, 0.99))
		s.MaxMS = ms(lat[len(lat)-1])
	}
	return s
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(float64(len(sorted))*p+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Transition is how traffic moved from one backend to another after a publish.
type Transition struct {
	// FirstOldMS and LastOldMS: from the publish to the first and the last response
	// (by when it was sent) answered by the old backend; nil when none was.
	FirstOldMS *float64 `json:"first_old_ms,omitempty"`
	LastOldMS  *float64 `json:"last_old_ms,omitempty"`
	// AllNewMS: from the publish to the first request after which every answer came
	// from the new backend; nil when the window never got there.
	AllNewMS *float64 `json:"all_new_ms,omitempty"`
	// OldAfter counts the old backend's answers to requests sent after the publish.
	OldAfter int `json:"old_after"`
}

// Transit measures the move from old to new among the responses sent in [publish, to).
func Transit(rs []Response, publish, to time.Time, old, new string) Transition {
	var t Transition
	var window []Response
	for _, r := range rs {
		if !r.Sent.Before(publish) && r.Sent.Before(to) {
			window = append(window, r)
		}
	}
	slices.SortStableFunc(window, func(a, b Response) int { return a.Sent.Compare(b.Sent) })
	at := func(r Response) *float64 { v := ms(r.Sent.Sub(publish)); return &v }
	lastNotNew := -1
	for i, r := range window {
		if r.Backend == old {
			t.OldAfter++
			if t.FirstOldMS == nil {
				t.FirstOldMS = at(r)
			}
			t.LastOldMS = at(r)
		}
		if r.Backend != new {
			lastNotNew = i
		}
	}
	if lastNotNew+1 < len(window) {
		t.AllNewMS = at(window[lastNotNew+1])
	}
	return t
}

func sortBySent(rs []Response) {
	slices.SortStableFunc(rs, func(a, b Response) int {
		return cmp.Or(a.Sent.Compare(b.Sent), cmp.Compare(a.Conn, b.Conn))
	})
}
