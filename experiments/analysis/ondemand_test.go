package analysis

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// onDemandLog is a delta log with two on-demand fetches at known times: svc-0001 found
// (VHDS and its cluster, CDS, on demand), svc-b:19000 not found.
func onDemandLog() []xdslog.Event {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	sent := func(ms int) *time.Time { ts := at(ms); return &ts }
	ok := true
	d := func(ms int, e xdslog.Event) xdslog.Event {
		e.TS, e.Mode, e.Server = at(ms), protocol.Delta, 1
		if e.Step == "" {
			e.Step = "vhost"
		}
		return e
	}
	vh := func(name string) xdslog.Resources {
		return xdslog.Resources{{Name: name, Version: "h1", Hash: "h1"}}
	}
	return []xdslog.Event{
		d(0, xdslog.Event{Event: xdslog.EventPublish, Step: "initial", Version: "1", Resources: xdslog.Resources{
			{Type: "VHDS", Name: "quote-route/svc-0001", Hash: "h1"}, {Type: "VHDS", Name: "quote-route/svc-0002", Hash: "h2"},
			{Type: "CDS", Name: "inventory-0001", Hash: "c1"}}}),
		d(1, xdslog.Event{Event: xdslog.EventStreamOpen, Step: "initial", Stream: 1}),
		d(2, xdslog.Event{Event: xdslog.EventRequest, Step: "initial", Stream: 1, Type: "VHDS", Kind: xdslog.RequestWildcard, Wildcard: true}),
		d(3, xdslog.Event{Event: xdslog.EventRequest, Step: "initial", Stream: 1, Type: "CDS", Kind: xdslog.RequestInitial, Names: []string{"x"}, Added: []string{"x"}}),
		// The request for svc-0001 is sent at 100 ms; Envoy subscribes at 103, the vhost
		// arrives at 105, the cluster is subscribed at 107 and arrives at 110; answered at 112.
		d(103, xdslog.Event{Event: xdslog.EventRequest, Stream: 1, Type: "VHDS", Kind: xdslog.RequestOnDemand,
			Names: []string{"quote-route/svc-0001"}, Added: []string{"quote-route/svc-0001"}}),
		d(105, xdslog.Event{Event: xdslog.EventSend, Stream: 1, Type: "VHDS", Nonce: "1", Version: "1", Resources: vh("quote-route/svc-0001"), Bytes: 90}),
		d(106, xdslog.Event{Event: xdslog.EventAck, Stream: 1, Type: "VHDS", Nonce: "1"}),
		d(107, xdslog.Event{Event: xdslog.EventRequest, Stream: 1, Type: "CDS", Kind: xdslog.RequestOnDemand,
			Names: []string{"inventory-0001", "x"}, Added: []string{"inventory-0001"}}),
		d(110, xdslog.Event{Event: xdslog.EventSend, Stream: 1, Type: "CDS", Nonce: "2", Version: "1", Resources: vh("inventory-0001"), Bytes: 120}),
		// A later request for the same host, sent after the subscribe, claims nothing.
		d(111, xdslog.Event{Event: xdslog.EventDataPlane, RequestID: "r2", Host: "svc-0001", SentTS: sent(104), Status: 200, Backend: "v1", Correct: &ok}),
		d(112, xdslog.Event{Event: xdslog.EventDataPlane, RequestID: "r1", Host: "SVC-0001", SentTS: sent(100), Status: 200, Backend: "v1", Correct: &ok}),
		// An unknown host, in the next step: not found, answered 404.
		d(200, xdslog.Event{Event: xdslog.EventRequest, Step: "unknown", Stream: 1, Type: "VHDS", Kind: xdslog.RequestOnDemand,
			Names: []string{"quote-route/svc-0001", "quote-route/svc-b:19000"}, Added: []string{"quote-route/svc-b:19000"}}),
		d(204, xdslog.Event{Event: xdslog.EventSend, Step: "unknown", Stream: 1, Type: "VHDS", Nonce: "3", Version: "1",
			Resources: xdslog.Resources{{Name: "quote-route/svc-b:19000", NotFound: true}}, Bytes: 40}),
		d(205, xdslog.Event{Event: xdslog.EventAck, Step: "unknown", Stream: 1, Type: "VHDS", Nonce: "3"}),
		d(206, xdslog.Event{Event: xdslog.EventDataPlane, Step: "unknown", RequestID: "r3", Host: "svc-b:19000", SentTS: sent(198), Status: 404, Flags: "NR"}),
	}
}

func TestOnDemandTimeline(t *testing.T) {
	sum := Summarize(onDemandLog())
	vhost, unknown := sum.Step("vhost"), sum.Step("unknown")
	require.NotNil(t, vhost.OnDemand)
	assert.Equal(t, map[string]int{"VHDS": 1, "CDS": 1}, vhost.OnDemand.Subscribes)
	assert.Equal(t, map[string]int{"VHDS": 2, "CDS": 1}, vhost.OnDemand.Available, "published names per type")
	assert.Equal(t, 1, vhost.Types["VHDS"].OnDemand)
	require.Len(t, vhost.OnDemand.Fetches, 2)
	ms := func(p *float64) float64 { require.NotNil(t, p); return *p }

	v := vhost.OnDemand.Fetches[0]
	assert.Equal(t, "quote-route/svc-0001", v.Name)
	assert.Equal(t, "r1", v.RequestID, "the first request sent for the host, though answered last")
	assert.Equal(t, FetchFound, v.Answer)
	assert.Equal(t, 3.0, ms(v.SubscribeMS))
	assert.Equal(t, 5.0, ms(v.ResponseMS))
	assert.Equal(t, 12.0, ms(v.AnswerMS))

	c := vhost.OnDemand.Fetches[1]
	assert.Equal(t, "CDS", c.Type)
	assert.Equal(t, "inventory-0001", c.Name)
	assert.Equal(t, "r2", c.RequestID, "a cluster goes to the first answered request that was in flight when it was subscribed")
	assert.Equal(t, 3.0, ms(c.SubscribeMS))
	assert.Equal(t, 6.0, ms(c.ResponseMS))

	require.NotNil(t, unknown.OnDemand)
	require.Len(t, unknown.OnDemand.Fetches, 1)
	nf := unknown.OnDemand.Fetches[0]
	assert.Equal(t, FetchNotFound, nf.Answer)
	assert.Equal(t, 404, nf.Status)
	assert.Equal(t, 2.0, ms(nf.SubscribeMS))
	assert.Equal(t, 6.0, ms(nf.ResponseMS))
	assert.Equal(t, 8.0, ms(nf.AnswerMS))
	f := unknown.Types["VHDS"]
	assert.Equal(t, 1, f.NotFound)
	assert.Equal(t, 0, f.Resources, "a not-found answer is not content")
	assert.Equal(t, 0, f.Redundant)
	assert.Nil(t, sum.Step("initial").OnDemand, "a step without on-demand subscribes has none")
}
