package delta

import (
	"slices"
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/experiments/simclient/simclienttest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/shared/xdslog/xdslogtest"
)

// TestServesAndRecordsASubscription: a wildcard CDS request is answered with the
// published cluster (system_version_info the label, each resource versioned by its
// content hash) and recorded as stream_open, request and send with the nonce on the
// wire; its ACK is recorded against that send by stream, type and nonce.
func TestServesAndRecordsASubscription(t *testing.T) {
	r := newRig(t)
	set := r.publish("initial", resources.State{Version: "1", InventoryPort: 18080})
	s := r.open()
	s.send(&discovery.DeltaDiscoveryRequest{Node: node, TypeUrl: resources.CDS.URL()})
	resp := s.recv(resources.CDS)
	assert.Equal(t, "1", resp.GetSystemVersionInfo())
	assert.Equal(t, published(set, resources.CDS), wire(resp))
	assert.Empty(t, resp.GetRemovedResources())
	s.ack(resp)

	ev := r.log.WaitFor(t, deadline, "the CDS ACK", has(xdslog.EventAck, "CDS", resp.GetNonce()))
	open := one(t, ev, "stream_open", is(xdslog.EventStreamOpen, "", ""))
	assert.Equal(t, "bufconn", open.Peer)
	req := one(t, ev, "request", is(xdslog.EventRequest, "CDS", ""))
	assert.Equal(t, xdslog.RequestWildcard, req.Kind)
	assert.True(t, req.Wildcard)
	assert.Equal(t, resources.NodeID, req.Node)
	send := one(t, ev, "send", is(xdslog.EventSend, "CDS", resp.GetNonce()))
	assert.Equal(t, "1", send.Version, "system_version_info")
	assert.Equal(t, wire(resp), recorded(t, send))
	ack := one(t, ev, "ack", is(xdslog.EventAck, "CDS", resp.GetNonce()))
	assert.Equal(t, "1", ack.SentVersion)
	assert.Equal(t, "1", ack.Accepted())
	for _, e := range []xdslog.Event{req, send, ack} {
		assert.Equal(t, open.Stream, e.Stream, "%s on the stream opened", e.Event)
		assert.Equal(t, protocol.Delta, e.Mode)
		assert.Equal(t, "initial", e.Step)
	}

	// Closing the stream is recorded on it, with nothing left unanswered.
	require.NoError(t, s.s.CloseSend())
	ev = r.log.WaitFor(t, deadline, "stream_close", has(xdslog.EventStreamClose, "", ""))
	closed := one(t, ev, "stream_close", is(xdslog.EventStreamClose, "", ""))
	assert.Equal(t, open.Stream, closed.Stream)
	require.NotNil(t, closed.Dropped)
	assert.Zero(t, *closed.Dropped)
}

// TestSendsWhatChangedAndRecordsTheNack: after a publish that changes only the
// endpoints, the next response is EDS alone under a new nonce and the new label, with
// only the changed assignment; its NACK is recorded against that nonce with the error,
// the client still on the label it last accepted.
func TestSendsWhatChangedAndRecordsTheNack(t *testing.T) {
	r := newRig(t)
	v1 := r.publish("initial", resources.State{Version: "1", InventoryPort: 18080})
	s := r.open()
	s.send(&discovery.DeltaDiscoveryRequest{Node: node, TypeUrl: resources.CDS.URL()})
	s.ack(s.recv(resources.CDS))
	eds := v1.ByType[resources.EDS].At(0).Name
	s.send(&discovery.DeltaDiscoveryRequest{TypeUrl: resources.EDS.URL(), ResourceNamesSubscribe: []string{eds}})
	first := s.recv(resources.EDS)
	assert.Equal(t, published(v1, resources.EDS), wire(first))
	s.ack(first)
	r.log.WaitFor(t, deadline, "the EDS ACK", has(xdslog.EventAck, "EDS", first.GetNonce()))

	v2 := r.publish("port-change", resources.State{Version: "2", InventoryPort: 18081})
	require.Equal(t, []resources.Type{resources.EDS}, v2.ChangedTypes(v1))
	changed := s.recv(resources.EDS)
	assert.Equal(t, "2", changed.GetSystemVersionInfo())
	assert.NotEqual(t, first.GetNonce(), changed.GetNonce())
	assert.Equal(t, published(v2, resources.EDS), wire(changed))
	assert.NotEqual(t, wire(first), wire(changed), "the new content, under a new version")
	s.nack(changed, "endpoint rejected for the test")

	ev := r.log.WaitFor(t, deadline, "the EDS NACK", has(xdslog.EventNack, "EDS", changed.GetNonce()))
	send := one(t, ev, "send of port-change", func(e xdslog.Event) bool { return e.Event == xdslog.EventSend && e.Step == "port-change" })
	assert.Equal(t, "EDS", send.Type, "delta sends only the changed type")
	assert.Equal(t, changed.GetNonce(), send.Nonce)
	assert.Equal(t, "2", send.Version)
	assert.Equal(t, wire(changed), recorded(t, send))
	nack := one(t, ev, "nack", is(xdslog.EventNack, "EDS", changed.GetNonce()))
	assert.Equal(t, send.Stream, nack.Stream)
	assert.Equal(t, "2", nack.SentVersion)
	assert.Equal(t, "1", nack.Accepted(), "a delta NACK leaves the client on the label it ACKed")
	assert.Equal(t, "endpoint rejected for the test", nack.Error)
	assert.Equal(t, 1, nack.Repeat)
	assert.Zero(t, xdslogtest.Count(ev, xdslog.EventUnmatched))
}

// TestCorrelatesByStreamTypeAndNonce: a nonce names a send only on its own stream and
// type (the library numbers each stream's responses from 1, so two streams' nonces may
// be the same). An answer is recorded against the send of its stream and type; a nonce
// answered under another type, or never sent, is unmatched, not guessed.
func TestCorrelatesByStreamTypeAndNonce(t *testing.T) {
	r := newRig(t)
	set := r.publish("initial", resources.State{Version: "1", InventoryPort: 18080})
	eds := set.ByType[resources.EDS].At(0).Name
	a := r.open()
	a.send(&discovery.DeltaDiscoveryRequest{Node: node, TypeUrl: resources.CDS.URL()})
	aCDS := a.recv(resources.CDS)
	a.send(&discovery.DeltaDiscoveryRequest{TypeUrl: resources.EDS.URL(), ResourceNamesSubscribe: []string{eds}})
	aEDS := a.recv(resources.EDS)
	ev := r.log.WaitFor(t, deadline, "a's two sends", func(ev []xdslog.Event) bool { return xdslogtest.Count(ev, xdslog.EventSend) == 2 })
	onA := one(t, ev, "a's CDS send", is(xdslog.EventSend, "CDS", aCDS.GetNonce())).Stream
	assert.Equal(t, onA, one(t, ev, "a's EDS send", is(xdslog.EventSend, "EDS", aEDS.GetNonce())).Stream)
	b := r.open()
	b.send(&discovery.DeltaDiscoveryRequest{Node: node, TypeUrl: resources.CDS.URL()})
	bCDS := b.recv(resources.CDS)
	ev = r.log.WaitFor(t, deadline, "b's send", func(ev []xdslog.Event) bool { return xdslogtest.Count(ev, xdslog.EventSend) == 3 })
	onB := one(t, ev, "b's send", func(e xdslog.Event) bool { return e.Event == xdslog.EventSend && e.Stream != onA }).Stream
	require.NotEqual(t, onA, onB)

	// a's CDS nonce as an EDS answer, and a nonce a was never sent: no send answered.
	a.send(&discovery.DeltaDiscoveryRequest{TypeUrl: resources.EDS.URL(), ResponseNonce: aCDS.GetNonce()})
	a.send(&discovery.DeltaDiscoveryRequest{TypeUrl: resources.CDS.URL(), ResponseNonce: "never-sent"})
	a.ack(aCDS)
	a.ack(aEDS)
	b.nack(bCDS, "cluster rejected for the test")
	ev = r.log.WaitFor(t, deadline, "a's ACKs and b's NACK", func(ev []xdslog.Event) bool {
		return xdslogtest.Count(ev, xdslog.EventAck) == 2 && xdslogtest.Count(ev, xdslog.EventNack) == 1
	})
	for _, resp := range []*discovery.DeltaDiscoveryResponse{aCDS, aEDS} {
		typ, _ := resources.TypeOf(resp.GetTypeUrl())
		ack := one(t, ev, "a's "+string(typ)+" ACK", is(xdslog.EventAck, string(typ), resp.GetNonce()))
		assert.Equal(t, onA, ack.Stream)
	}
	nack := one(t, ev, "b's NACK", is(xdslog.EventNack, "", ""))
	assert.Equal(t, onB, nack.Stream)
	assert.Equal(t, "CDS", nack.Type)
	assert.Equal(t, bCDS.GetNonce(), nack.Nonce)
	wrongType := one(t, ev, "unmatched EDS", is(xdslog.EventUnmatched, "EDS", aCDS.GetNonce()))
	assert.Equal(t, onA, wrongType.Stream, "a's CDS nonce, answered as EDS")
	neverSent := one(t, ev, "unmatched CDS", is(xdslog.EventUnmatched, "CDS", "never-sent"))
	assert.Equal(t, onA, neverSent.Stream)
	assert.Equal(t, 2, xdslogtest.Count(ev, xdslog.EventUnmatched))
}

// TestNackedContentIsNotResent: a simulated client NACKs the invalid route; delta does
// not re-send the rejected content (there is no NACK policy to choose), and the next
// publish of a valid route is accepted. SotW's counterpart is the NACK policies'
// tests (sotw_test.go).
func TestNackedContentIsNotResent(t *testing.T) {
	r := newRig(t)
	c, err := simclient.New(protocol.Delta, "")
	require.NoError(t, err)
	r.publish("initial", resources.State{Version: "1", InventoryPort: 18080})
	conn := r.lis.Dial(t)
	t.Cleanup(simclienttest.Start(r.ctx, c, conn))
	simclienttest.WaitFor(t, c, deadline, "version 1 accepted", func(s simclient.State) bool { return s.VersionInfo[resources.RDS] == "1" })

	r.publish("invalid", resources.State{Version: "2", InventoryPort: 18080, InvalidRoute: true})
	ev := r.log.WaitFor(t, deadline, "the RDS NACK", has(xdslog.EventNack, "RDS", ""))
	nack := one(t, ev, "nack", is(xdslog.EventNack, "RDS", ""))
	assert.Contains(t, nack.Error, "PathSpecifier")
	assert.Equal(t, "1", nack.Accepted())

	r.publish("recover", resources.State{Version: "3", InventoryPort: 18080})
	simclienttest.WaitFor(t, c, deadline, "version 3 accepted", func(s simclient.State) bool { return s.VersionInfo[resources.RDS] == "3" })
	ev = r.log.WaitFor(t, deadline, "the ACK of version 3", func(ev []xdslog.Event) bool {
		return slices.ContainsFunc(ev, func(e xdslog.Event) bool { return e.Event == xdslog.EventAck && e.Type == "RDS" && e.Step == "recover" })
	})
	sends := 0
	for _, e := range ev {
		if e.Event == xdslog.EventSend && e.Type == "RDS" && e.Step == "invalid" {
			sends++
		}
	}
	assert.Equal(t, 1, sends, "the rejected route was sent once, never re-sent")
	assert.Equal(t, 1, xdslogtest.Count(ev, xdslog.EventNack))
}
