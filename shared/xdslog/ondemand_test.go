package xdslog

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/protocol"
)

// kinds is each request event's type, kind and added names, in log order.
func kinds(ev []Event) [][3]any {
	var out [][3]any
	for _, e := range filterEv(ev, EventRequest) {
		out = append(out, [3]any{e.Type, e.Kind, e.Added})
	}
	return out
}

// TestOnDemandClassification: Envoy's VHDS and on-demand CDS requests that add names after
// its first request of the type are on-demand subscribes, and so is a first CDS request
// naming a cluster (on-demand CDS without cds_config); its first VHDS request (a legacy
// wildcard), a wildcard CDS, a reconnect's resume, an EDS subscribe, a plain unsubscribe
// and every SotW request are not.
func TestOnDemandClassification(t *testing.T) {
	t.Parallel()
	r, buf := newTestRecorder(protocol.Delta)
	r.StreamOpen(1, "")
	r.Delta(1, "VHDS", DeltaRequest{})                                            // legacy wildcard
	r.Delta(1, "VHDS", DeltaRequest{Subscribe: []string{"quote-route/svc-0001"}}) // traffic asked
	r.Delta(1, "CDS", DeltaRequest{Subscribe: []string{"inventory-0001"}})        // first CDS, named: on demand
	r.Delta(1, "CDS", DeltaRequest{Subscribe: []string{"inventory-0002"}})        // on demand
	r.Delta(1, "EDS", DeltaRequest{Subscribe: []string{"inventory-0001"}})
	r.Delta(1, "EDS", DeltaRequest{Subscribe: []string{"inventory-0002"}}) // EDS follows CDS: not on demand
	r.Delta(1, "CDS", DeltaRequest{Unsubscribe: []string{"inventory-0002"}})
	r.Delta(1, "VHDS", DeltaRequest{Subscribe: []string{"*"}}) // a wildcard is asked by config, not traffic
	r.StreamClose(1)
	// A reconnect resumes with what it holds: its first request is a resume.
	r.Delta(2, "VHDS", DeltaRequest{Subscribe: []string{"*", "quote-route/svc-0001"}, Initial: map[string]string{"quote-route/svc-0001": "h"}})
	r.Delta(2, "VHDS", DeltaRequest{Subscribe: []string{"quote-route/svc-0003"}})
	r.Delta(2, "CDS", DeltaRequest{})                                      // cds_config: wildcard
	r.Delta(2, "CDS", DeltaRequest{Subscribe: []string{"inventory-0003"}}) // on demand beside it
	r.Delta(3, "CDS", DeltaRequest{Subscribe: []string{"*", "inventory-0003"}, Initial: map[string]string{"inventory-0003": "h"}})

	got := kinds(read(t, buf))
	want := [][3]any{
		{"VHDS", RequestWildcard, []string(nil)},
		{"VHDS", RequestOnDemand, []string{"quote-route/svc-0001"}},
		{"CDS", RequestOnDemand, []string{"inventory-0001"}},
		{"CDS", RequestOnDemand, []string{"inventory-0002"}},
		{"EDS", RequestInitial, []string{"inventory-0001"}},
		{"EDS", RequestSubscribe, []string{"inventory-0002"}},
		{"CDS", RequestSubscribe, []string(nil)},
		{"VHDS", RequestSubscribe, []string{"*"}},
		{"VHDS", RequestResume, []string{"*", "quote-route/svc-0001"}},
		{"VHDS", RequestOnDemand, []string{"quote-route/svc-0003"}},
		{"CDS", RequestWildcard, []string(nil)},
		{"CDS", RequestOnDemand, []string{"inventory-0003"}},
		{"CDS", RequestResume, []string{"*", "inventory-0003"}},
	}
	assert.Equal(t, want, got)

	// SotW never subscribes on demand (Envoy's SotW muxes do not implement it).
	s, sbuf := newTestRecorder(protocol.SotW)
	s.SotW(1, "CDS", SotWRequest{Names: []string{"a"}})
	s.SotW(1, "CDS", SotWRequest{Names: []string{"a", "b"}})
	assert.Equal(t, RequestSubscribe, kinds(read(t, sbuf))[1][1])
}

// TestNotFoundIsNotContent: a bodiless "does not exist" answer is never redundant, even
// sent twice, and the client holds nothing under its name after ACKing it; a vhost the
// client held and then is told does not exist is no longer held.
func TestNotFoundIsNotContent(t *testing.T) {
	t.Parallel()
	r, buf := newTestRecorder(protocol.Delta)
	r.StreamOpen(1, "")
	r.Delta(1, "VHDS", DeltaRequest{})
	r.Delta(1, "VHDS", DeltaRequest{Subscribe: []string{"quote-route/svc-b:19000"}})
	nf := []Resource{{Name: "quote-route/svc-b:19000", NotFound: true}}
	r.Send(1, "VHDS", "1", "v1", nf, nil, 40)
	r.Delta(1, "VHDS", DeltaRequest{Nonce: "1"})
	r.Send(1, "VHDS", "2", "v1", nf, nil, 40)
	r.Delta(1, "VHDS", DeltaRequest{Nonce: "2"})
	// Found, then gone.
	r.Send(1, "VHDS", "3", "v2", res("quote-route/svc-0001", "h1"), nil, 90)
	r.Delta(1, "VHDS", DeltaRequest{Nonce: "3"})
	r.Send(1, "VHDS", "4", "v3", []Resource{{Name: "quote-route/svc-0001", NotFound: true}}, nil, 40)
	r.Delta(1, "VHDS", DeltaRequest{Nonce: "4"})
	r.Send(1, "VHDS", "5", "v4", res("quote-route/svc-0001", "h1"), nil, 90)

	sends := filterEv(read(t, buf), EventSend)
	require.Len(t, sends, 5)
	for _, i := range []int{0, 1, 3} {
		assert.True(t, sends[i].Resources[0].NotFound)
		assert.Nil(t, sends[i].Resources[0].Redundant, "send %d: a not-found answer is never redundant", i)
	}
	assert.False(t, sends[4].Resources[0].IsRedundant(), "told it does not exist, the client holds nothing to make it redundant")
	st := r.Status()
	require.Len(t, st, 1)
	assert.NotContains(t, st[0].Accepted["VHDS"], "quote-route/svc-b:19000")
}
