package protocol

import (
	"context"
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// TestPublishRefusesInconsistentState: a set missing the route or the endpoints fails
// Consistent; the publish is refused, nothing is recorded, and the old state stays.
func TestPublishRefusesInconsistentState(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			h := newHarness(t, v)
			good := h.publish("initial", resources.State{Version: "1", InventoryPort: portV1})
			for _, drop := range []resources.Type{resources.RDS, resources.EDS} {
				set, err := resources.Build(resources.State{Version: "2", InventoryPort: portV2})
				require.NoError(t, err)
				delete(set.ByType, drop)
				err = h.pub.Publish(h.ctx, set)
				require.Error(t, err, "missing %s", drop)
				assert.Contains(t, err.Error(), "publish version 2")
				assert.Contains(t, err.Error(), "not consistent")
			}
			assert.Same(t, good, h.pub.Current())
			assert.Len(t, filter(h.log.Events(t), of("initial", xdslog.EventPublish)), 1)
		})
	}
}

// TestUnmatchedAndDropped: feedback naming a nonce never sent on this stream is recorded
// as unmatched (not an ACK); a stream closed with unanswered sends records them as dropped.
func TestUnmatchedAndDropped(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			h := newHarness(t, v)
			h.publish("initial", resources.State{Version: "1", InventoryPort: portV1})
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			ads := discovery.NewAggregatedDiscoveryServiceClient(h.dial())
			if v.mode == protocol.SotW {
				s, err := ads.StreamAggregatedResources(ctx)
				require.NoError(t, err)
				// A request carrying a nonce from "before a restart".
				require.NoError(t, s.Send(&discovery.DiscoveryRequest{Node: nodeProto(), TypeUrl: resources.CDS.URL(), VersionInfo: "1", ResponseNonce: "7"}))
				require.NoError(t, s.Send(&discovery.DiscoveryRequest{TypeUrl: resources.LDS.URL()}))
				_, err = s.Recv() // the LDS response, never answered
				require.NoError(t, err)
				require.NoError(t, s.CloseSend())
			} else {
				s, err := ads.DeltaAggregatedResources(ctx)
				require.NoError(t, err)
				require.NoError(t, s.Send(&discovery.DeltaDiscoveryRequest{Node: nodeProto(), TypeUrl: resources.CDS.URL(), ResponseNonce: "7"}))
				require.NoError(t, s.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: resources.LDS.URL()}))
				_, err = s.Recv()
				require.NoError(t, err)
				require.NoError(t, s.CloseSend())
			}
			ev := h.waitLog("stream closed", func(ev []xdslog.Event) bool { return len(filter(ev, of("initial", xdslog.EventStreamClose))) == 1 })
			un := filter(ev, of("initial", xdslog.EventUnmatched))
			require.Len(t, un, 1)
			assert.Equal(t, "7", un[0].Nonce)
			assert.Equal(t, "CDS", un[0].Type)
			assert.Empty(t, filter(ev, of("initial", xdslog.EventAck)), "an unmatched nonce is never guessed to be an ACK")
			cl := filter(ev, of("initial", xdslog.EventStreamClose))[0]
			require.NotNil(t, cl.Dropped)
			assert.GreaterOrEqual(t, *cl.Dropped, 1, "the unanswered send is counted as dropped")
			sends := len(filter(ev, of("initial", xdslog.EventSend)))
			assert.Equal(t, sends, *cl.Dropped, "every send on the stream went unanswered")
			assert.Empty(t, h.rec.Status(), "stream state is cleared on close")
		})
	}
}

// TestPushToClosingStreamIsDropped: a client's close reaches the server asynchronously.
// A publish that lands before the server has seen it is pushed on the dying stream: the
// send is recorded on that stream, never answered, and counted as dropped when the
// stream closes. (This was the cause of a flaky reconnect assertion: such a push is not
// a second delivery to the client, and a test must wait for stream_close before it calls
// the client disconnected.)
func TestPushToClosingStreamIsDropped(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			h := newHarness(t, v)
			h.publish("initial", resources.State{Version: "1", InventoryPort: portV1})
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			g := h.rawStream(ctx)
			eds := []string{resources.ClusterName}
			require.NoError(t, g.send(resources.EDS.URL(), eds, "", ""))
			nonce, version, n, err := g.recv()
			require.NoError(t, err)
			require.Equal(t, 1, n)
			require.NoError(t, g.send(resources.EDS.URL(), eds, nonce, version))
			ev := h.waitLog("EDS ACK", func(ev []xdslog.Event) bool { return len(filter(ev, of("initial", xdslog.EventAck))) == 1 })
			stream := filter(ev, of("initial", xdslog.EventAck))[0].Stream

			h.publish("closing", resources.State{Version: "2", InventoryPort: portV2})
			ev = h.waitLog("push on the open stream", func(ev []xdslog.Event) bool {
				return len(filter(ev, ofType("closing", xdslog.EventSend, "EDS"))) == 1
			})
			push := filter(ev, ofType("closing", xdslog.EventSend, "EDS"))[0]
			assert.Equal(t, stream, push.Stream)
			cancel() // the client goes away without reading the push

			ev = h.waitLog("stream closed", func(ev []xdslog.Event) bool { return len(filter(ev, of("closing", xdslog.EventStreamClose))) == 1 })
			cl := filter(ev, of("closing", xdslog.EventStreamClose))[0]
			assert.Equal(t, stream, cl.Stream)
			require.NotNil(t, cl.Dropped)
			assert.Equal(t, 1, *cl.Dropped, "the push to the closing stream is counted as dropped")
			assert.Empty(t, filter(ev, of("closing", xdslog.EventAck)))
			assert.Empty(t, filter(ev, of("closing", xdslog.EventNack)))
		})
	}
}
