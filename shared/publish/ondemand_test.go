package publish

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	rsrc "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/xds-workbench/lab/shared/bufconntest"
	"github.com/xds-workbench/lab/shared/resources"
)

// vhdsStream is a raw delta ADS stream to a library delta server over bufconn, speaking
// VHDS the way Envoy does (the requests observed from Envoy 1.40).
type vhdsStream struct {
	t *testing.T
	s discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
}

func serveDelta(t *testing.T, cache cachev3.Cache) *vhdsStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	lis := bufconntest.ServeGRPC(t, func(srv *grpc.Server) {
		discovery.RegisterAggregatedDiscoveryServiceServer(srv, serverv3.NewServer(ctx, cache, nil))
	})
	sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
	t.Cleanup(scancel)
	s, err := discovery.NewAggregatedDiscoveryServiceClient(lis.Dial(t)).DeltaAggregatedResources(sctx)
	require.NoError(t, err)
	return &vhdsStream{t: t, s: s}
}

func (v *vhdsStream) send(subscribe []string, nonce string) {
	v.t.Helper()
	require.NoError(v.t, v.s.Send(&discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: resources.NodeID},
		TypeUrl: rsrc.VirtualHostType, ResourceNamesSubscribe: subscribe, ResponseNonce: nonce}))
}

// recv returns the next response's resource names, the not-found names among them, its
// removals and its nonce.
func (v *vhdsStream) recv() (names, notFound, removed []string, nonce string) {
	v.t.Helper()
	resp, err := v.s.Recv()
	require.NoError(v.t, err)
	for _, r := range resp.GetResources() {
		names = append(names, r.GetName())
		if r.GetResource() == nil {
			assert.Equal(v.t, []string{r.GetName()}, r.GetAliases(), "a not-found answer aliases its own name")
			notFound = append(notFound, r.GetName())
		}
	}
	slices.Sort(names)
	return names, notFound, resp.GetRemovedResources(), resp.GetNonce()
}

// TestOnDemandCacheServesVHDS walks Envoy's VHDS exchange through the decorator over
// each library cache: the first (legacy wildcard) request gets no virtual host, only the
// removal that ends Envoy's wait; a subscribe gets that one virtual host; an unknown one
// gets a not-found answer; and once the state adds it, the client that asked gets it.
func TestOnDemandCacheServesVHDS(t *testing.T) {
	t.Parallel()
	od := resources.OnDemand{VirtualHosts: true}
	for _, kind := range []Cache{SnapshotCache, LinearCache} {
		t.Run(string(kind), func(t *testing.T) {
			var buf bytes.Buffer
			p := statePublisher(t, kind, &buf)
			set, err := resources.Build(resources.State{Version: "1", InventoryPort: 18080, Clusters: 3, OnDemand: od})
			require.NoError(t, err)
			require.NoError(t, p.Publish(context.Background(), set))
			odc := &OnDemandCache{Cache: cacheOf(p), State: func(string) *resources.Set { return p.Current() }}
			v := serveDelta(t, odc)

			v.send(nil, "")
			names, _, removed, nonce := v.recv()
			assert.Empty(t, names, "no virtual host for the wildcard")
			assert.Equal(t, []string{"quote-route/*"}, removed)

			v.send([]string{"quote-route/svc-0001"}, "")
			names, notFound, _, _ := v.recv()
			assert.Equal(t, []string{"quote-route/svc-0001"}, names)
			assert.Empty(t, notFound)

			v.send([]string{"quote-route/svc-0003"}, nonce)
			names, notFound, _, nonce = v.recv()
			assert.Equal(t, []string{"quote-route/svc-0003"}, names)
			assert.Equal(t, []string{"quote-route/svc-0003"}, notFound)

			v.send(nil, nonce) // the ACK: the library watches the names again
			next, err := resources.Rebuild(set, resources.State{Version: "2", InventoryPort: 18080, Clusters: 4, OnDemand: od})
			require.NoError(t, err)
			require.NoError(t, p.Publish(context.Background(), next))
			names, notFound, _, _ = v.recv()
			assert.Equal(t, []string{"quote-route/svc-0003"}, names, "published later, sent to the client that asked")
			assert.Empty(t, notFound)
		})
	}
}

// TestLibraryAloneSendsEveryVirtualHost is the control: without the decorator, both
// library caches answer Envoy's first VHDS request, a legacy wildcard, with every virtual
// host (pkg/cache/v3/delta.go createDeltaResponse), so nothing would be on demand.
func TestLibraryAloneSendsEveryVirtualHost(t *testing.T) {
	t.Parallel()
	for _, kind := range []Cache{SnapshotCache, LinearCache} {
		t.Run(string(kind), func(t *testing.T) {
			var buf bytes.Buffer
			p := statePublisher(t, kind, &buf)
			set, err := resources.Build(resources.State{Version: "1", InventoryPort: 18080, Clusters: 3, OnDemand: resources.OnDemand{VirtualHosts: true}})
			require.NoError(t, err)
			require.NoError(t, p.Publish(context.Background(), set))
			v := serveDelta(t, cacheOf(p))
			v.send(nil, "")
			names, _, _, _ := v.recv()
			assert.Equal(t, []string{"quote-route/svc-0000", "quote-route/svc-0001", "quote-route/svc-0002"}, names)
		})
	}
}

// cacheOf is the library cache a publisher feeds.
func cacheOf(p StatePublisher) cachev3.Cache {
	switch p := p.(type) {
	case *LinearPublisher:
		return p.Cache()
	case *Publisher:
		return p.cache.(cachev3.Cache)
	}
	return nil
}
