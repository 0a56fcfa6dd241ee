package protocol

import (
	"context"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/shared/xdslog/xdslogtest"
)

// Raw ADS clients, one rule of the protocol at a time ("ACK/NACK and resource type
// instance version", "Resource updates", "How the client specifies what resources to
// return", "Knowing when a requested resource does not exist"): what the client sends
// and what xds.log must say it was.

// logSince returns the events after the first n and waits until cond holds for them.
func (h *harness) eventsAfter(n int, what string, cond func([]xdslog.Event) bool) []xdslog.Event {
	h.t.Helper()
	ev := h.waitLog(what, func(ev []xdslog.Event) bool { return len(ev) >= n && cond(ev[n:]) })
	return ev[n:]
}

func only(t *testing.T, ev []xdslog.Event, event string) xdslog.Event {
	t.Helper()
	got := filter(ev, func(e xdslog.Event) bool { return e.Event == event })
	require.Len(t, got, 1, "exactly one %s in %v", event, kinds(ev))
	return got[0]
}

func kinds(ev []xdslog.Event) []string {
	var out []string
	for _, e := range ev {
		out = append(out, e.Event+"/"+e.Type+"/"+e.Kind+"/n="+e.Nonce)
	}
	return out
}

// TestSotWRequestRules: every SotW request rule, on one stream, with the hold NACK
// policy so that a NACK is not immediately followed by a re-send (a re-send would make
// the NACKed nonce stale, which is a different rule).
func TestSotWRequestRules(t *testing.T) {
	// The snapshot cache, and the indexed cache (the protocol's floor) alike.
	for _, cache := range []publish.Cache{publish.SnapshotCache, publish.IndexedCache} {
		t.Run(string(cache), func(t *testing.T) { sotwRequestRules(t, cache) })
	}
}

func sotwRequestRules(t *testing.T, cache publish.Cache) {
	v := variant{"sotw-pertype-hold", protocol.SotW, "per-type", "hold", cache}
	h := newHarness(t, v)
	h.publish("rules", resources.State{Version: "1", InventoryPort: portV1})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	s, err := discovery.NewAggregatedDiscoveryServiceClient(h.dial()).StreamAggregatedResources(ctx)
	require.NoError(t, err)
	send := func(names []string, version, nonce string, errMsg string) {
		t.Helper()
		req := &discovery.DiscoveryRequest{Node: nodeProto(), TypeUrl: resources.EDS.URL(), ResourceNames: names, VersionInfo: version, ResponseNonce: nonce}
		if errMsg != "" {
			req.ErrorDetail = &rpcstatus.Status{Code: 3, Message: errMsg}
		}
		require.NoError(t, s.Send(req))
	}
	recv := func() *discovery.DiscoveryResponse {
		t.Helper()
		r, err := s.Recv()
		require.NoError(t, err)
		return r
	}
	inv := []string{resources.ClusterName}

	// First request with names: initial.
	send(inv, "", "", "")
	r1 := recv()
	ev := h.eventsAfter(0, "initial request and send", func(ev []xdslog.Event) bool { return xdslogtest.Count(ev, xdslog.EventSend) == 1 })
	req := only(t, ev, xdslog.EventRequest)
	assert.Equal(t, xdslog.RequestInitial, req.Kind)
	assert.Equal(t, inv, req.Added)
	assert.False(t, req.Wildcard)

	// ACK: the latest nonce, not answered yet. Then the same answered nonce again with
	// the same names: a re-request, never a second ACK. The log is ordered, so the one
	// request event once both are in is the re-request: the ACK, which changed nothing,
	// wrote none.
	n := len(h.log.Events(t))
	send(inv, r1.GetVersionInfo(), r1.GetNonce(), "")
	send(inv, r1.GetVersionInfo(), r1.GetNonce(), "")
	ev = h.eventsAfter(n, "ACK and re-request", func(ev []xdslog.Event) bool {
		return xdslogtest.Count(ev, xdslog.EventAck) == 1 && xdslogtest.Count(ev, xdslog.EventRequest) >= 1
	})
	assert.Equal(t, r1.GetNonce(), only(t, ev, xdslog.EventAck).Nonce)
	assert.Equal(t, xdslog.RequestRepeat, only(t, ev, xdslog.EventRequest).Kind)

	// A name change carrying the latest (answered) nonce: a subscription change, and a
	// name the server does not have is listed as missing. The SnapshotCache sends nothing
	// for it.
	n = len(h.log.Events(t))
	send([]string{resources.ClusterName, "ghost"}, r1.GetVersionInfo(), r1.GetNonce(), "")
	ev = h.eventsAfter(n, "subscription change", func(ev []xdslog.Event) bool { return xdslogtest.Count(ev, xdslog.EventRequest) == 1 })
	sub := only(t, ev, xdslog.EventRequest)
	assert.Equal(t, xdslog.RequestSubscribe, sub.Kind)
	assert.Equal(t, []string{"ghost"}, sub.Added)
	assert.Equal(t, []string{"ghost"}, sub.Missing)
	assert.Equal(t, []string{"ghost", resources.ClusterName}, sub.Names)
	assert.Zero(t, xdslogtest.Count(ev, xdslog.EventAck))

	// A new send, then a request with the older nonce: stale, dropped by the library; with
	// error_detail it is still not a NACK.
	h.publish("rules", resources.State{Version: "2", InventoryPort: portV2})
	r2 := recv()
	require.NotEqual(t, r1.GetNonce(), r2.GetNonce())
	n = h.eventsAfterLen("second send", xdslog.EventSend, 2)
	send([]string{resources.ClusterName, "ghost"}, r1.GetVersionInfo(), r1.GetNonce(), "")
	send([]string{resources.ClusterName, "ghost"}, r1.GetVersionInfo(), r1.GetNonce(), "rejected late")
	ev = h.eventsAfter(n, "two stale requests", func(ev []xdslog.Event) bool { return xdslogtest.Count(ev, xdslog.EventStale) == 2 })
	stale := filter(ev, func(e xdslog.Event) bool { return e.Event == xdslog.EventStale })
	for _, st := range stale {
		assert.Equal(t, r1.GetNonce(), st.Nonce)
		assert.Equal(t, r2.GetNonce(), st.LatestNonce)
	}
	assert.Empty(t, stale[0].Error)
	assert.Equal(t, "rejected late", stale[1].Error)
	assert.Zero(t, xdslogtest.Count(ev, xdslog.EventAck)+xdslogtest.Count(ev, xdslog.EventNack), "a stale nonce answers nothing")

	// NACK of the latest send; then Envoy's next request carries the NACKed nonce without
	// error_detail (Envoy clears it) and a name change: not an ACK, and the rejected
	// content is never marked accepted.
	n = len(h.log.Events(t))
	send([]string{resources.ClusterName, "ghost"}, r1.GetVersionInfo(), r2.GetNonce(), "bad endpoints")
	ev = h.eventsAfter(n, "NACK", func(ev []xdslog.Event) bool { return xdslogtest.Count(ev, xdslog.EventNack) == 1 })
	assert.Equal(t, r2.GetNonce(), only(t, ev, xdslog.EventNack).Nonce)
	n = len(h.log.Events(t))
	send(inv, r1.GetVersionInfo(), r2.GetNonce(), "")
	ev = h.eventsAfter(n, "name change after the NACK", func(ev []xdslog.Event) bool { return xdslogtest.Count(ev, xdslog.EventRequest) == 1 })
	assert.Zero(t, xdslogtest.Count(ev, xdslog.EventAck), "the NACKed nonce is answered already")
	ch := only(t, ev, xdslog.EventRequest)
	assert.Equal(t, xdslog.RequestSubscribe, ch.Kind)
	assert.Equal(t, []string{"ghost"}, ch.Removed)
	st := h.rec.Status()
	require.Len(t, st, 1)
	set1, err := resources.Build(resources.State{Version: "1", InventoryPort: portV1})
	require.NoError(t, err)
	assert.Equal(t, set1.Hashes(resources.EDS)[resources.ClusterName], st[0].Accepted["EDS"][resources.ClusterName].Hash,
		"the client still runs version 1's endpoints")

	// The name change carried version_info 1, which is not the snapshot's: even under the
	// hold policy the SnapshotCache answers it at once with the rejected content
	// (pkg/cache/v3/simple.go, CreateWatch), under a new nonce. The indexed cache, as the
	// LinearCache, compares per resource with what it sent: the transport presents the
	// rejected version (hold), nothing differs, nothing is sent.
	latest := r2
	if cache == publish.SnapshotCache {
		r3 := recv()
		assert.Equal(t, r2.GetVersionInfo(), r3.GetVersionInfo())
		latest = r3
	}

	// Empty names after an explicit subscription: an unsubscribe, not a wildcard.
	n = len(h.log.Events(t))
	send(nil, r1.GetVersionInfo(), latest.GetNonce(), "")
	ev = h.eventsAfter(n, "unsubscribe", func(ev []xdslog.Event) bool { return xdslogtest.Count(ev, xdslog.EventRequest) == 1 })
	un := only(t, ev, xdslog.EventRequest)
	assert.Equal(t, xdslog.RequestUnsubscribe, un.Kind)
	assert.Equal(t, inv, un.Removed)
	assert.Empty(t, un.Names)
	assert.False(t, un.Wildcard)

	// Empty names on a type never subscribed explicitly: a wildcard.
	n = len(h.log.Events(t))
	require.NoError(t, s.Send(&discovery.DiscoveryRequest{TypeUrl: resources.CDS.URL()}))
	ev = h.eventsAfter(n, "wildcard", func(ev []xdslog.Event) bool { return xdslogtest.Count(ev, xdslog.EventRequest) == 1 })
	w := only(t, ev, xdslog.EventRequest)
	assert.Equal(t, xdslog.RequestWildcard, w.Kind)
	assert.True(t, w.Wildcard)
	assertOneAnswerPerNonce(t, h.log.Events(t))
}

// eventsAfterLen waits until the log holds want events of kind and returns the log's
// length then.
func (h *harness) eventsAfterLen(what, event string, want int) int {
	h.t.Helper()
	ev := h.waitLog(what, func(ev []xdslog.Event) bool { return xdslogtest.Count(ev, event) >= want })
	return len(ev)
}

// TestDeltaRequestRules: subscribe, unsubscribe, ACK/NACK by nonce (once), a name that
// does not exist (the spec expects removed_resources; go-control-plane sends nothing),
// and a nonce never sent.
func TestDeltaRequestRules(t *testing.T) {
	for _, cache := range []publish.Cache{publish.SnapshotCache, publish.IndexedCache} {
		t.Run(string(cache), func(t *testing.T) { deltaRequestRules(t, cache) })
	}
}

func deltaRequestRules(t *testing.T, cache publish.Cache) {
	h := newHarness(t, variant{"delta", protocol.Delta, "", "", cache})
	h.publish("rules", resources.State{Version: "1", InventoryPort: portV1})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	s, err := discovery.NewAggregatedDiscoveryServiceClient(h.dial()).DeltaAggregatedResources(ctx)
	require.NoError(t, err)
	send := func(typ resources.Type, sub, unsub []string, nonce, errMsg string) {
		t.Helper()
		req := &discovery.DeltaDiscoveryRequest{Node: nodeProto(), TypeUrl: typ.URL(), ResourceNamesSubscribe: sub, ResourceNamesUnsubscribe: unsub, ResponseNonce: nonce}
		if errMsg != "" {
			req.ErrorDetail = &rpcstatus.Status{Code: 3, Message: errMsg}
		}
		require.NoError(t, s.Send(req))
	}
	recv := func() *discovery.DeltaDiscoveryResponse {
		t.Helper()
		r, err := s.Recv()
		require.NoError(t, err)
		return r
	}

	// Legacy wildcard, then an explicit subscription.
	send(resources.CDS, nil, nil, "", "")
	c1 := recv()
	send(resources.EDS, []string{resources.ClusterName}, nil, "", "")
	e1 := recv()
	ev := h.eventsAfter(0, "two requests", func(ev []xdslog.Event) bool { return xdslogtest.Count(ev, xdslog.EventRequest) == 2 })
	reqs := filter(ev, func(e xdslog.Event) bool { return e.Event == xdslog.EventRequest })
	assert.Equal(t, xdslog.RequestWildcard, reqs[0].Kind)
	assert.True(t, reqs[0].Wildcard)
	assert.Equal(t, xdslog.RequestInitial, reqs[1].Kind)
	assert.Equal(t, []string{resources.ClusterName}, reqs[1].Added)

	// ACK by nonce, once: the same nonce again is no second ACK.
	n := len(h.log.Events(t))
	send(resources.CDS, nil, nil, c1.GetNonce(), "")
	send(resources.EDS, nil, nil, e1.GetNonce(), "")
	send(resources.EDS, nil, nil, e1.GetNonce(), "")
	ev = h.eventsAfter(n, "ACKs", func(ev []xdslog.Event) bool {
		return xdslogtest.Count(ev, xdslog.EventAck) == 2 && xdslogtest.Count(ev, xdslog.EventRequest) == 1
	})
	assert.Equal(t, xdslog.RequestRepeat, only(t, ev, xdslog.EventRequest).Kind)

	// A name the server does not have: listed as missing; the library sends nothing.
	n = len(h.log.Events(t))
	send(resources.EDS, []string{"ghost"}, nil, "", "")
	ev = h.eventsAfter(n, "subscribe ghost", func(ev []xdslog.Event) bool { return xdslogtest.Count(ev, xdslog.EventRequest) == 1 })
	g := only(t, ev, xdslog.EventRequest)
	assert.Equal(t, xdslog.RequestSubscribe, g.Kind)
	assert.Equal(t, []string{"ghost"}, g.Missing)
	// A copy of n: assert.Never's goroutine may still read it after Never returns.
	sendSince := func(from int) func() bool {
		return func() bool { return xdslogtest.Count(h.log.Events(t)[from:], xdslog.EventSend) > 0 }
	}
	assert.Never(t, sendSince(n), 300*time.Millisecond, 10*time.Millisecond,
		"go-control-plane does not answer a name it does not have (the spec expects removed_resources)")

	// NACK by nonce; the delta server re-sends nothing.
	h.publish("rules", resources.State{Version: "2", InventoryPort: portV2})
	e2 := recv()
	n = len(h.log.Events(t))
	send(resources.EDS, nil, nil, e2.GetNonce(), "bad endpoints")
	ev = h.eventsAfter(n, "NACK", func(ev []xdslog.Event) bool { return xdslogtest.Count(ev, xdslog.EventNack) == 1 })
	assert.Equal(t, e2.GetNonce(), only(t, ev, xdslog.EventNack).Nonce)
	assert.Never(t, sendSince(n), 300*time.Millisecond, 10*time.Millisecond, "the delta server does not re-send rejected content")

	// Unsubscribe everything: an unsubscribe.
	n = len(h.log.Events(t))
	send(resources.EDS, nil, []string{resources.ClusterName, "ghost"}, "", "")
	ev = h.eventsAfter(n, "unsubscribe", func(ev []xdslog.Event) bool { return xdslogtest.Count(ev, xdslog.EventRequest) == 1 })
	u := only(t, ev, xdslog.EventRequest)
	assert.Equal(t, xdslog.RequestUnsubscribe, u.Kind)
	assert.ElementsMatch(t, []string{resources.ClusterName, "ghost"}, u.Removed)
	assert.Empty(t, u.Names)

	// A nonce never sent on this stream: unmatched, never an ACK.
	n = len(h.log.Events(t))
	send(resources.CDS, nil, nil, "99", "")
	ev = h.eventsAfter(n, "unmatched", func(ev []xdslog.Event) bool { return xdslogtest.Count(ev, xdslog.EventUnmatched) == 1 })
	assert.Zero(t, xdslogtest.Count(ev, xdslog.EventAck))
	assertOneAnswerPerNonce(t, h.log.Events(t))
}

// assertOneAnswerPerNonce: at most one ack or nack per (server, stream, type, nonce).
func assertOneAnswerPerNonce(t *testing.T, ev []xdslog.Event) {
	t.Helper()
	type key struct {
		server     int
		stream     int64
		typ, nonce string
	}
	seen := map[key]int{}
	for _, e := range ev {
		if e.Event == xdslog.EventAck || e.Event == xdslog.EventNack {
			k := key{e.Server, e.Stream, e.Type, e.Nonce}
			seen[k]++
			assert.Equal(t, 1, seen[k], "second answer to %+v", k)
		}
	}
}
