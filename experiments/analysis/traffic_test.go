package analysis

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

var trafficT0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return trafficT0.Add(time.Duration(ms) * time.Millisecond) }

// trafficStep is a step as the runner logs it under load: its events, then its traffic
// event, whose timeline runs from 5 ms for 10 buckets of 10 ms (to 105 ms).
func trafficStep(tr xdslog.Traffic) []xdslog.Event {
	ev := func(ms int, e xdslog.Event) xdslog.Event {
		e.TS, e.Mode, e.Step, e.Server = at(ms), protocol.SotW, "port-change", 1
		return e
	}
	return []xdslog.Event{
		ev(0, xdslog.Event{Event: xdslog.EventStep}),
		ev(2, xdslog.Event{Event: xdslog.EventAck, Stream: 1, Type: "LDS", Nonce: "1"}), // before the timeline
		ev(10, xdslog.Event{Event: xdslog.EventPublish, Version: "2", Changed: []string{"EDS"}}),
		ev(15, xdslog.Event{Event: xdslog.EventSend, Stream: 1, Type: "EDS", Nonce: "2"}),
		ev(20, xdslog.Event{Event: xdslog.EventAck, Stream: 1, Type: "EDS", Nonce: "2"}),
		ev(30, xdslog.Event{Event: xdslog.EventNack, Stream: 1, Type: "RDS", Nonce: "3"}),
		ev(40, xdslog.Event{Event: xdslog.EventStorm, Stream: 1, Type: "RDS", Sends: 30, Nacks: 30, Summary: true}),
		ev(105, xdslog.Event{Event: xdslog.EventAck, Stream: 1, Type: "CDS", Nonce: "4"}), // the span's last instant
		ev(130, xdslog.Event{Event: xdslog.EventAck, Stream: 1, Type: "RDS", Nonce: "5"}), // after it
		// The load's own responses (folded): counted by the traffic event, never as probes.
		ev(135, xdslog.Event{Event: xdslog.EventDataPlane, Probe: xdslog.ProbeLoad, Status: 200, Backend: "v1", Client: "envoy", Represents: 30}),
		ev(136, xdslog.Event{Event: xdslog.EventDataPlane, Probe: xdslog.ProbeLoad, Status: 503, Flags: "NC", Client: "envoy"}),
		ev(140, xdslog.Event{Event: xdslog.EventTraffic, Traffic: &tr}),
	}
}

// TestTrafficOfAStep: a step's traffic event is its Traffic, with the step's publishes,
// ACKs and NACKs inside the timeline placed on it (those before and after it left out),
// the rate checked against BehindShare and a success without a backend named as the
// timeline names it.
func TestTrafficOfAStep(t *testing.T) {
	tr := xdslog.Traffic{Requests: 40, OK: 38, ByBackend: map[string]int{"v1": 30, "": 8}, Failures: map[string]int{"503 NC": 2},
		AskedRate: 200, AchievedRate: 179, P50MS: 1, P99MS: 2, MaxMS: 3, DurationMS: 1000,
		Move:     &xdslog.TrafficMove{From: "v1", To: "v2", OldAfter: 3},
		Timeline: &xdslog.Timeline{Start: at(5), BucketMS: 10, Series: map[string][]int{"v1": {4, 4, 4, 4, 4, 4, 3, 3, 0, 0}, "?": {0, 0, 0, 0, 0, 0, 1, 1, 3, 3}, "503 NC": {0, 0, 0, 0, 0, 0, 0, 0, 1, 1}}},
	}
	s := Summarize(trafficStep(tr))
	got := s.Step("port-change").Traffic
	require.NotNil(t, got)
	assert.Equal(t, 40, got.Requests)
	assert.Equal(t, map[string]int{"v1": 30, UnknownSeries: 8}, got.ByBackend)
	assert.True(t, got.Behind, "179 of 200 is under 90%%")
	assert.Empty(t, got.TimelineProblem)
	assert.Equal(t, 10, got.Buckets())
	assert.InDelta(t, 100.0, got.SpanMS(), 1e-9)
	assert.Equal(t, []TrafficMark{
		{Kind: xdslog.EventPublish, Version: "2", AtMS: 5},
		{Kind: xdslog.EventAck, Type: "EDS", AtMS: 15},
		{Kind: xdslog.EventNack, Type: "RDS", AtMS: 25},
		{Kind: xdslog.EventNack, Type: "RDS", AtMS: 35, NACKs: 30},
		{Kind: xdslog.EventAck, Type: "CDS", AtMS: 100},
	}, got.Marks)
	keys := []string{}
	for _, sr := range got.TimelineSeries() {
		keys = append(keys, sr.Kind+":"+sr.Key)
	}
	assert.Equal(t, []string{"backend:v1", "backend:?", "failure:503 NC"}, keys, "backends by name, the unknown one last, then failures")

	// The log's event is not changed, and the live view has the same figures.
	assert.Equal(t, map[string]int{"v1": 30, "": 8}, tr.ByBackend)
	a := NewAccumulator()
	for _, e := range trafficStep(tr) {
		a.Observe(e)
	}
	assert.Equal(t, got, a.Step("port-change").Traffic)

	b, err := json.Marshal(s.Step("port-change"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"traffic":{"requests":40,"ok":38,"by_backend":{"?":8,"v1":30}`)
	assert.Contains(t, string(b), `"behind":true,"marks":[{"kind":"publish","version":"2","at_ms":5}`)
	st := s.Step("port-change")
	assert.Nil(t, st.Probes, "the load's responses are not probes")
	assert.Nil(t, st.DataPlane, "nor the step's data-plane observation")

	tr.AchievedRate = 180
	assert.False(t, Summarize(trafficStep(tr)).Step("port-change").Traffic.Behind, "90% is not behind")
	tr.AchievedRate, tr.DurationMS = 100, 999
	assert.False(t, Summarize(trafficStep(tr)).Step("port-change").Traffic.Behind, "a rate over less than a second says nothing")
	tr.AskedRate, tr.AchievedRate, tr.DurationMS = 0, 0, 1000
	assert.False(t, Summarize(trafficStep(tr)).Step("port-change").Traffic.Behind, "nothing asked")

	assert.Nil(t, Summarize(trafficStep(tr)[:9]).Step("port-change").Traffic, "no traffic event, no traffic")
}

// TestTrafficMarksBounded: a step's marks stop at maxTrafficMarks; the rest are counted.
func TestTrafficMarksBounded(t *testing.T) {
	ev := []xdslog.Event{{TS: at(0), Event: xdslog.EventStep, Mode: protocol.SotW, Step: "s"}}
	for i := range maxTrafficMarks + 500 {
		ev = append(ev, xdslog.Event{TS: at(1).Add(time.Duration(i) * time.Microsecond), Event: xdslog.EventNack, Mode: protocol.SotW, Step: "s", Type: "RDS"})
	}
	ev = append(ev, xdslog.Event{TS: at(100), Event: xdslog.EventTraffic, Mode: protocol.SotW, Step: "s",
		Traffic: &xdslog.Traffic{Timeline: &xdslog.Timeline{Start: at(0), BucketMS: 10, Series: map[string][]int{"v1": make([]int, 10)}}}})
	tr := Summarize(ev).Step("s").Traffic
	require.NotNil(t, tr)
	assert.Len(t, tr.Marks, maxTrafficMarks)
	assert.Equal(t, 500, tr.MarksLeftOut)
}

// TestCheckTimeline: a logged timeline is drawn as it is, repaired, or dropped with the
// reason; nothing it holds can make a reader panic.
func TestCheckTimeline(t *testing.T) {
	many := map[string][]int{}
	for i := range 40 {
		many[fmt.Sprintf("%d NC", 500+i)] = []int{i, 1}
	}
	cases := []struct {
		name    string
		in      *xdslog.Timeline
		problem string // a part of TimelineProblem ("" : none)
		series  map[string][]int
	}{
		{"none", nil, "", nil},
		{"as logged", &xdslog.Timeline{Start: at(0), BucketMS: 20, Series: map[string][]int{"v1": {1, 2}, "503": {0, 1}}}, "",
			map[string][]int{"v1": {1, 2}, "503": {0, 1}}},
		{"negative bucket", &xdslog.Timeline{Start: at(0), BucketMS: -5, Series: map[string][]int{"v1": {1}}}, "not drawn: bucket_ms -5 is not between 0 and 3600000", nil},
		{"zero bucket", &xdslog.Timeline{Start: at(0), Series: map[string][]int{"v1": {1}}}, "not drawn: bucket_ms 0", nil},
		{"bucket of a day", &xdslog.Timeline{Start: at(0), BucketMS: 86_400_000, Series: map[string][]int{"v1": {1}}}, "not drawn: bucket_ms 8.64e+07", nil},
		{"no series", &xdslog.Timeline{Start: at(0), BucketMS: 5}, "not drawn: the timeline has no bucket", nil},
		{"empty series", &xdslog.Timeline{Start: at(0), BucketMS: 5, Series: map[string][]int{"v1": {}}}, "not drawn: the timeline has no bucket", nil},
		{"unequal", &xdslog.Timeline{Start: at(0), BucketMS: 5, Series: map[string][]int{"v1": {3}, "v2": {1, 2, 3, 4}}},
			"series of unequal length, padded with zeros to 4 buckets", map[string][]int{"v1": {3, 0, 0, 0}, "v2": {1, 2, 3, 4}}},
		{"negative counts", &xdslog.Timeline{Start: at(0), BucketMS: 5, Series: map[string][]int{"v1": {-3, 2}}},
			"negative counts read as 0", map[string][]int{"v1": {0, 2}}},
		{"huge counts", &xdslog.Timeline{Start: at(0), BucketMS: 5, Series: map[string][]int{"v1": {1 << 62, 2}}},
			"", map[string][]int{"v1": {maxRepresents, 2}}},
		{"no start", &xdslog.Timeline{BucketMS: 5, Series: map[string][]int{"v1": {1}}}, "no start time: nothing marked on it",
			map[string][]int{"v1": {1}}},
		{"too long", &xdslog.Timeline{Start: at(0), BucketMS: 5, Series: map[string][]int{"v1": make([]int, 5000)}},
			"5000 buckets, the first 1000 kept", map[string][]int{"v1": make([]int, maxTimelineBuckets)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, problem := checkTimeline(c.in)
			if c.problem == "" {
				assert.Empty(t, problem)
			} else {
				assert.Contains(t, problem, c.problem)
			}
			if c.series == nil {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, c.series, got.Series)
		})
	}

	t.Run("many keys", func(t *testing.T) {
		got, problem := checkTimeline(&xdslog.Timeline{Start: at(0), BucketMS: 5, Series: many})
		assert.Equal(t, `40 series, the smallest folded into "other"`, problem)
		require.Len(t, got.Series, maxProbeKeys)
		// The 15 busiest (539 NC down to 525 NC) are kept; the other 25 (0..24 and a 1
		// each) add up into OtherKey.
		assert.Equal(t, []int{24 * 25 / 2, 25}, got.Series[OtherKey])
		assert.Contains(t, got.Series, "539 NC")
		assert.NotContains(t, got.Series, "524 NC")
		tr := Traffic{Traffic: xdslog.Traffic{Timeline: got}}
		series := tr.TimelineSeries()
		assert.Equal(t, SeriesFailure, series[0].Kind, "a key the counts do not name is a failure when it starts with a failing status")
		assert.Equal(t, SeriesOther, series[len(series)-1].Kind)
	})
	assert.False(t, isFailureKey("v1"))
	assert.False(t, isFailureKey("200 ok"))
	assert.True(t, isFailureKey("0 refused"))
	var none Traffic
	assert.Zero(t, none.Buckets())
	assert.Zero(t, none.SpanMS())
	assert.Nil(t, none.TimelineSeries())
}
