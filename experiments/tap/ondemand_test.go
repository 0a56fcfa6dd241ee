package tap

import (
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// startOnDemandUpstream is the workbench's delta control plane serving the teaching
// state with its routes on demand (VHDS), through publish.OnDemandCache.
func startOnDemandUpstream(t *testing.T) *upstream {
	t.Helper()
	state := resources.State{Version: "1", InventoryPort: 18080, OnDemand: resources.OnDemand{VirtualHosts: true}}
	return serveUpstream(t, protocol.Delta, state, func(lib cachev3.Cache, pub *publish.Publisher) cachev3.Cache {
		return &publish.OnDemandCache{Cache: lib, State: func(string) *resources.Set { return pub.Current() }}
	})
}

// TestDeltaVHDSThroughTheTap: a delta VHDS exchange as Envoy has it (a legacy wildcard
// first, then on-demand subscribes with response_nonce "") through the tap in front of
// go-control-plane's delta server behind OnDemandCache. The tap records it as VHDS, not
// undecodable nor refused: the first answer's removal, the on-demand subscribe of the
// teaching host, its virtual host, and a bodiless not-found answer for an unknown host,
// the same sends, ACKs and redundancy as the server's own log.
func TestDeltaVHDSThroughTheTap(t *testing.T) {
	up := startOnDemandUpstream(t)
	h := startTap(t, up.lis.ContextDialer)
	ads, ctx := h.ads(t)
	s, err := ads.DeltaAggregatedResources(ctx)
	require.NoError(t, err)
	vhds := resources.VHDS.URL()
	recv := func() *discovery.DeltaDiscoveryResponse {
		r, err := s.Recv()
		require.NoError(t, err)
		require.Equal(t, vhds, r.GetTypeUrl())
		require.NoError(t, s.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: vhds, ResponseNonce: r.GetNonce()}))
		return r
	}

	require.NoError(t, s.Send(&discovery.DeltaDiscoveryRequest{Node: node, TypeUrl: vhds}))
	first := recv()
	assert.Empty(t, first.GetResources())
	assert.Equal(t, []string{resources.VirtualHostName(resources.RouteName, "*")}, first.GetRemovedResources())

	quote := resources.VirtualHostName(resources.RouteName, resources.QuoteHost)
	require.NoError(t, s.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: vhds, ResourceNamesSubscribe: []string{quote}}))
	found := recv()
	require.Len(t, found.GetResources(), 1)
	assert.Equal(t, quote, found.GetResources()[0].GetName())
	assert.NotNil(t, found.GetResources()[0].GetResource())

	unknown := resources.VirtualHostName(resources.RouteName, "svc-b:19000")
	require.NoError(t, s.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: vhds, ResourceNamesSubscribe: []string{unknown}}))
	missing := recv()
	require.Len(t, missing.GetResources(), 1)
	assert.Nil(t, missing.GetResources()[0].GetResource(), "a bodiless not-found answer")

	tapLog := h.logs[protocol.Delta]
	waitEvent(t, tapLog, "the tap's ACK of the not-found answer", kind(xdslog.EventAck, "VHDS", missing.GetNonce()))
	waitEvent(t, up.log, "the server's ACK of the not-found answer", kind(xdslog.EventAck, "VHDS", missing.GetNonce()))
	ev := tapLog.Events(t)
	var onDemand [][]string
	for _, e := range ev {
		assert.NotEqual(t, xdslog.EventUndecodable, e.Event, "%+v", e)
		assert.NotEqual(t, xdslog.EventRefused, e.Event, "%+v", e)
		if e.Event == xdslog.EventRequest && e.Kind == xdslog.RequestOnDemand {
			onDemand = append(onDemand, e.Added)
		}
	}
	assert.Equal(t, [][]string{{quote}, {unknown}}, onDemand, "the subscribes after the first request are on demand")
	nf := waitEvent(t, tapLog, "the not-found send", kind(xdslog.EventSend, "VHDS", missing.GetNonce()))
	require.Len(t, nf.Resources, 1)
	assert.True(t, nf.Resources[0].NotFound)
	assert.Nil(t, nf.Resources[0].Redundant, "not content, so never redundant")

	want := exchanges(up.log.Events(t))
	require.Len(t, want, 6)
	assert.Equal(t, want, exchanges(ev), "the tap records what the server recorded")
}
