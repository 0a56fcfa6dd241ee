package analysis

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xds-workbench/lab/shared/xdslog"
)

// Traffic is a step's steady load (lab run --load): the step's traffic event as the
// runner counted it, its timeline checked (checkTimeline), and what every reader derives
// from it: whether the load fell behind its rate, and the step's publishes, ACKs and
// NACKs placed on the timeline. This is the one rule: summary.json and every `lab
// compare` format show these figures as they are.
type Traffic struct {
	// Traffic is the event's, except that Timeline is the checked copy (nil when the
	// logged one cannot be drawn: TimelineProblem says why) and a success that named no
	// backend is counted in ByBackend under UnknownSeries, as the timeline counts it.
	xdslog.Traffic
	// Behind is xdslog.Traffic.FellBehind: the load kept less than 90% of its rate.
	Behind bool `json:"behind"`
	// Marks are the step's publishes, ACKs and NACKs that fall inside the timeline's span,
	// in time order, placed at ms from the timeline's start. None when the timeline is
	// absent or has no start.
	Marks []TrafficMark `json:"marks,omitempty"`
	// MarksLeftOut counts the step's publishes, ACKs and NACKs past maxTrafficMarks: not
	// placed (a NACK storm of thousands would otherwise be kept one by one).
	MarksLeftOut int `json:"marks_left_out,omitempty"`
	// TimelineProblem says what was wrong with the logged timeline: why Timeline is nil,
	// or how it was repaired ("" when nothing was).
	TimelineProblem string `json:"timeline_problem,omitempty"`
}

// TrafficMark is a publish, an ACK or a NACK on a traffic timeline.
type TrafficMark struct {
	// Kind is xdslog.EventPublish, EventAck or EventNack (a storm summary is a NACK mark
	// standing for its NACKs).
	Kind string `json:"kind"`
	// Type is an ACK's or NACK's type; Version a publish's label.
	Type    string `json:"type,omitempty"`
	Version string `json:"version,omitempty"`
	// AtMS is the event's time from the timeline's start.
	AtMS float64 `json:"at_ms"`
	// NACKs is how many NACKs a storm summary's mark stands for (0: one event).
	NACKs int `json:"nacks,omitempty"`
}

// UnknownSeries is the timeline's key for a success that named no backend (the load
// generator's, experiments/load).
const UnknownSeries = "?"

// Bounds on what a traffic event can make a summary hold: the runner writes at most 120
// buckets of 5 ms to 60 s, a few backends and failure keys, and a mark per publish, ACK
// and NACK of the step; a hostile or corrupt log could claim anything.
const (
	maxTimelineBuckets = 1000
	maxBucketMS        = float64(time.Hour / time.Millisecond)
	maxTrafficMarks    = 1000
)

// Kinds of a timeline series (TrafficSeries.Kind).
const (
	SeriesBackend = "backend"
	SeriesFailure = "failure"
	// SeriesOther is OtherKey when it holds folded series (more than maxProbeKeys).
	SeriesOther = "other"
)

// TrafficSeries is one answer's counts on a timeline: a backend's, a failure key's, or the
// folded rest.
type TrafficSeries struct {
	Key    string
	Kind   string
	Counts []int
	Total  int
}

// markEvent is a publish, ACK or NACK kept until the step's traffic event says where its
// timeline is.
type markEvent struct {
	mark TrafficMark // AtMS unset
	ts   time.Time
}

// mark keeps a publish, ACK, NACK or storm summary of the step for its traffic timeline.
func (st *Step) mark(e xdslog.Event) {
	if len(st.marks) >= maxTrafficMarks {
		st.marksLeftOut++
		return
	}
	m := TrafficMark{Kind: e.Event, Type: e.Type}
	switch e.Event {
	case xdslog.EventPublish:
		m.Type, m.Version = "", e.Version
	case xdslog.EventStorm:
		m.Kind, m.NACKs = xdslog.EventNack, e.Nacks
	}
	st.marks = append(st.marks, markEvent{mark: m, ts: e.TS})
}

// observeTraffic keeps a traffic event's figures, its timeline checked. A step has one
// (the runner writes it as the step ends); should a log have more, the last counts.
func (st *Step) observeTraffic(e xdslog.Event) {
	if e.Traffic == nil {
		return
	}
	t := Traffic{Traffic: *e.Traffic}
	t.ByBackend, t.Failures = maps.Clone(t.ByBackend), maps.Clone(t.Failures)
	if n, ok := t.ByBackend[""]; ok {
		delete(t.ByBackend, "")
		t.ByBackend[UnknownSeries] += n
	}
	if t.Move != nil {
		mv := *t.Move
		t.Move = &mv
	}
	t.Timeline, t.TimelineProblem = checkTimeline(t.Timeline)
	t.Behind = t.FellBehind()
	st.traffic = &t
}

// checkTimeline returns a copy of tl that can be drawn, and what it had to repair: every
// series as long as the longest (padded with zeros), at most maxTimelineBuckets buckets,
// no negative count, at most maxProbeKeys series (the smallest folded into OtherKey). A
// timeline without a positive bucket width or without any bucket cannot be drawn: nil.
func checkTimeline(tl *xdslog.Timeline) (*xdslog.Timeline, string) {
	if tl == nil {
		return nil, ""
	}
	if !(tl.BucketMS > 0) || tl.BucketMS > maxBucketMS {
		return nil, fmt.Sprintf("not drawn: bucket_ms %g is not between 0 and %.0f", tl.BucketMS, maxBucketMS)
	}
	n, shortest := 0, -1
	for _, s := range tl.Series {
		n = max(n, len(s))
		if shortest < 0 || len(s) < shortest {
			shortest = len(s)
		}
	}
	if n == 0 {
		return nil, "not drawn: the timeline has no bucket"
	}
	var problems []string
	if shortest != n {
		problems = append(problems, fmt.Sprintf("series of unequal length, padded with zeros to %d buckets", n))
	}
	if n > maxTimelineBuckets {
		problems = append(problems, fmt.Sprintf("%d buckets, the first %d kept", n, maxTimelineBuckets))
		n = maxTimelineBuckets
	}
	out := &xdslog.Timeline{Start: tl.Start, BucketMS: tl.BucketMS, Series: make(map[string][]int, len(tl.Series))}
	negative := false
	for k, s := range tl.Series {
		c := make([]int, n)
		for i, v := range s[:min(len(s), n)] {
			if v < 0 {
				negative = true
				v = 0
			}
			c[i] = min(v, maxRepresents)
		}
		out.Series[k] = c
	}
	if negative {
		problems = append(problems, "negative counts read as 0")
	}
	if len(out.Series) > maxProbeKeys {
		problems = append(problems, fmt.Sprintf("%d series, the smallest folded into %q", len(out.Series), OtherKey))
		foldSeries(out.Series)
	}
	if tl.Start.IsZero() {
		problems = append(problems, "no start time: nothing marked on it")
	}
	return out, strings.Join(problems, "; ")
}

// foldSeries keeps the maxProbeKeys-1 series with the most requests (ties by name) and
// adds the rest into OtherKey, bucket by bucket.
func foldSeries(series map[string][]int) {
	keys := slices.Collect(maps.Keys(series))
	totals := make(map[string]int, len(keys))
	for _, k := range keys {
		totals[k] = sum(series[k])
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(totals[b], totals[a]), strings.Compare(a, b)) })
	other := series[OtherKey]
	if other == nil {
		for _, s := range series {
			other = make([]int, len(s))
			break
		}
	}
	kept := 0
	for _, k := range keys {
		if k == OtherKey {
			continue
		}
		if kept < maxProbeKeys-1 {
			kept++
			continue
		}
		for i, v := range series[k] {
			other[i] = min(other[i]+v, maxRepresents)
		}
		delete(series, k)
	}
	series[OtherKey] = other
}

func sum(s []int) int {
	n := 0
	for _, v := range s {
		n += v
	}
	return n
}

// trafficFrom finishes a step's traffic: a copy, with the step's publishes, ACKs and NACKs
// that fall inside the timeline's span placed on it. Nil when the step had no traffic
// event.
func (st *Step) trafficFrom() *Traffic {
	if st.traffic == nil {
		return nil
	}
	t := *st.traffic
	t.ByBackend, t.Failures = maps.Clone(t.ByBackend), maps.Clone(t.Failures)
	if t.Move != nil {
		mv := *t.Move
		t.Move = &mv
	}
	if tl := t.Timeline; tl != nil {
		c := *tl
		c.Series = make(map[string][]int, len(tl.Series))
		for k, s := range tl.Series {
			c.Series[k] = slices.Clone(s)
		}
		t.Timeline = &c
	}
	t.MarksLeftOut = st.marksLeftOut
	if t.Timeline == nil || t.Timeline.Start.IsZero() {
		return &t
	}
	span := t.SpanMS()
	for _, m := range st.marks {
		if m.ts.IsZero() {
			continue
		}
		at := msSince(t.Timeline.Start, m.ts)
		if at < 0 || at > span {
			continue
		}
		mk := m.mark
		mk.AtMS = at
		t.Marks = append(t.Marks, mk)
	}
	slices.SortStableFunc(t.Marks, func(a, b TrafficMark) int { return cmp.Compare(a.AtMS, b.AtMS) })
	return &t
}

// Buckets is how many buckets the checked timeline has (0 without one).
func (t *Traffic) Buckets() int {
	if t.Timeline == nil {
		return 0
	}
	for _, s := range t.Timeline.Series {
		return len(s) // checked: every series is as long
	}
	return 0
}

// SpanMS is the timeline's length: its buckets times their width (0 without one).
func (t *Traffic) SpanMS() float64 {
	if t.Timeline == nil {
		return 0
	}
	return float64(t.Buckets()) * t.Timeline.BucketMS
}

// TimelineSeries are the checked timeline's series in display order: backends by name
// (UnknownSeries last), then failure keys, most requests first, then the folded rest.
// A key is a backend's when ByBackend counts it, a failure's when Failures does; a key
// neither counts is a failure when it starts with a status outside 2xx, as the load's
// failure keys do ("503 NC", "0 refused").
func (t *Traffic) TimelineSeries() []TrafficSeries {
	if t.Timeline == nil {
		return nil
	}
	var out []TrafficSeries
	for k, c := range t.Timeline.Series {
		s := TrafficSeries{Key: k, Counts: c, Total: sum(c), Kind: SeriesBackend}
		_, backend := t.ByBackend[k]
		_, failure := t.Failures[k]
		switch {
		case k == OtherKey && !backend && !failure:
			s.Kind = SeriesOther
		case backend || k == UnknownSeries:
		case failure || isFailureKey(k):
			s.Kind = SeriesFailure
		}
		out = append(out, s)
	}
	rank := map[string]int{SeriesBackend: 0, SeriesFailure: 1, SeriesOther: 2}
	slices.SortFunc(out, func(a, b TrafficSeries) int {
		if c := cmp.Compare(rank[a.Kind], rank[b.Kind]); c != 0 {
			return c
		}
		if a.Kind == SeriesBackend {
			return cmp.Or(cmp.Compare(boolRank(a.Key == UnknownSeries), boolRank(b.Key == UnknownSeries)), strings.Compare(a.Key, b.Key))
		}
		return cmp.Or(cmp.Compare(b.Total, a.Total), strings.Compare(a.Key, b.Key))
	})
	return out
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// isFailureKey reports whether k starts with an HTTP status outside 2xx (0: no answer).
func isFailureKey(k string) bool {
	status, _, _ := strings.Cut(k, " ")
	n, err := strconv.Atoi(status)
	return err == nil && !ProbeOK(n)
}
