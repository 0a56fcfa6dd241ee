package load

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/xds-workbench/lab/shared/stats"
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
		if r.OK() {
			s.OK++
			s.ByBackend[r.Backend]++
			continue
		}
		s.Failures[Answer(r, flags[r.ID])]++
	}
	if d := to.Sub(from).Seconds(); d > 0 {
		s.AchievedRate = float64(s.Requests) / d
		s.DurationMS = ms(to.Sub(from))
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		s.P50MS = ms(stats.Percentile(lat, 50))
		s.P99MS = ms(stats.Percentile(lat, 99))
		s.MaxMS = ms(lat[len(lat)-1])
	}
	s.Timeline = timeline(rs, from, to, flags)
	return s
}

// maxBuckets bounds a timeline's width: enough to see a move of a few milliseconds in a
// short step, few enough to draw.
const maxBuckets = 120

// bucketSizes are the widths a timeline may use (ms): the smallest that keeps a step
// within maxBuckets.
var bucketSizes = []float64{5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000}

// timeline counts the responses sent in [from, to) per bucket and answer.
func timeline(rs []Response, from, to time.Time, flags map[string]string) *xdslog.Timeline {
	span := ms(to.Sub(from))
	if span <= 0 {
		return nil
	}
	size := bucketSizes[len(bucketSizes)-1]
	for _, b := range bucketSizes {
		if span/b <= maxBuckets {
			size = b
			break
		}
	}
	n := max(1, int(math.Ceil(span/size)))
	t := &xdslog.Timeline{Start: from.UTC(), BucketMS: size, Series: map[string][]int{}}
	for _, r := range rs {
		if r.Sent.Before(from) || !r.Sent.Before(to) {
			continue
		}
		key := Answer(r, flags[r.ID])
		if t.Series[key] == nil {
			t.Series[key] = make([]int, n)
		}
		t.Series[key][min(n-1, int(ms(r.Sent.Sub(from))/size))]++
	}
	return t
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Transit measures the move from answer old to answer new (as Answer names them: a
// backend, or a failure such as "503 NC") among the responses sent in [publish, to).
func Transit(rs []Response, publish, to time.Time, old, new string, flags map[string]string) xdslog.TrafficMove {
	t := xdslog.TrafficMove{From: old, To: new}
	var window []Response
	for _, r := range rs {
		if r.Sent.Before(to) && r.Done().After(publish) && Answer(r, flags[r.ID]) == old {
			if d := ms(r.Done().Sub(publish)); t.LastOldAnsweredMS == nil || d > *t.LastOldAnsweredMS {
				t.LastOldAnsweredMS = &d
			}
		}
		if !r.Sent.Before(publish) && r.Sent.Before(to) {
			window = append(window, r)
		}
	}
	slices.SortStableFunc(window, func(a, b Response) int { return a.Sent.Compare(b.Sent) })
	at := func(r Response) *float64 { v := ms(r.Sent.Sub(publish)); return &v }
	lastNotNew := -1
	for i, r := range window {
		a := Answer(r, flags[r.ID])
		if a == old {
			t.OldAfter++
			if t.FirstOldMS == nil {
				t.FirstOldMS = at(r)
			}
			t.LastOldMS = at(r)
		}
		if a != new {
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
