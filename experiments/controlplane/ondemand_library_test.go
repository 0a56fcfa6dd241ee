package controlplane

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	rsrc "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/shared/xdslog/xdslogtest"
)

// TestLibraryAloneIsNotOnDemand: served by go-control-plane's delta server without
// publish.OnDemandCache, real Envoy receives every virtual host in answer to its first
// VHDS request (a legacy wildcard), before any traffic: the library's wildcard rule, not
// on demand.
func TestLibraryAloneIsNotOnDemand(t *testing.T) {
	log := &xdslogtest.Log{}
	cp, err := Start(context.Background(), Options{Mode: protocol.Delta, Addr: "127.0.0.1:0", Recorder: xdslog.NewRecorder(log, protocol.Delta)})
	require.NoError(t, err)
	t.Cleanup(cp.Stop)
	listenerPort, err := loopback.FreePort()
	require.NoError(t, err)
	_, err = cp.Publish(context.Background(), resources.State{Version: "1", InventoryPort: 18080, ListenerPort: listenerPort, Clusters: 20, OnDemand: resources.OnDemand{VirtualHosts: true}})
	require.NoError(t, err)
	proc := envoyOn(t, protocol.Delta, cp, bootstrap.Params{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, proc.WaitReady(ctx))
	log.WaitFor(t, 20*time.Second, "the VHDS ACK", func(ev []xdslog.Event) bool {
		return slices.ContainsFunc(ev, func(e xdslog.Event) bool { return e.Event == xdslog.EventAck && e.Type == "VHDS" })
	})
	for _, e := range log.Events(t) {
		if e.Event == xdslog.EventRequest && e.Type == "VHDS" {
			assert.Empty(t, e.Added, "Envoy asked for nothing by name")
		}
		if e.Event == xdslog.EventSend && e.Type == "VHDS" {
			assert.Len(t, e.Resources, 20, "every virtual host, with no request for any")
		}
	}
}

// namedOnlyCache serves VirtualHost watches as named subscriptions and nothing more:
// OnDemandCache without its first answer.
type namedOnlyCache struct{ cachev3.Cache }

type namedSub struct{ cachev3.Subscription }

func (namedSub) IsWildcard() bool { return false }

func (c namedOnlyCache) CreateDeltaWatch(r *cachev3.DeltaRequest, sub cachev3.Subscription, ch chan cachev3.DeltaResponse) (func(), error) {
	if r.GetTypeUrl() == rsrc.VirtualHostType {
		sub = namedSub{sub}
	}
	return c.Cache.CreateDeltaWatch(r, sub, ch)
}

// TestVHDSWaitsForAFirstAnswer: why OnDemandCache answers Envoy's first VHDS request.
// Served named-only with no answer to it, Envoy's listener waits for the VHDS
// subscription's initial fetch until initial_fetch_timeout (set to 1 s on the vhds config
// source here; 15 s by default) and counts init_fetch_timeout; with the workbench's
// control plane (OnDemandCache) it does not.
func TestVHDSWaitsForAFirstAnswer(t *testing.T) {
	listenerPort, err := loopback.FreePort()
	require.NoError(t, err)
	set := vhdsSetWithFetchTimeout(t, listenerPort)

	// Named-only, no first answer: a bare library server over a snapshot cache.
	sc := publish.NewSnapshotCache(nil)
	snap, err := set.Snapshot(resources.UniformVersions("1"))
	require.NoError(t, err)
	require.NoError(t, sc.SetSnapshot(context.Background(), resources.NodeID, snap))
	lis, err := loopback.Listen(0)
	require.NoError(t, err)
	srv := grpc.NewServer()
	discovery.RegisterAggregatedDiscoveryServiceServer(srv, serverv3.NewServer(context.Background(), namedOnlyCache{sc}, nil))
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	bare := &ControlPlane{addr: lis.Addr().String(), port: lis.Addr().(*net.TCPAddr).Port}
	assert.Equal(t, "1", vhdsInitTimeouts(t, bare), "the listener waited for the VHDS initial fetch")

	cp, err := Start(context.Background(), Options{Mode: protocol.Delta, Addr: "127.0.0.1:0", OnDemand: resources.OnDemand{VirtualHosts: true}, Recorder: xdslog.NewRecorder(&xdslogtest.Log{}, protocol.Delta)})
	require.NoError(t, err)
	t.Cleanup(cp.Stop)
	require.NoError(t, cp.PublishSet(context.Background(), set))
	assert.Equal(t, "0", vhdsInitTimeouts(t, cp), "OnDemandCache's first answer ends the wait")
}

// vhdsInitTimeouts starts Envoy on cp, waits until it is ready and returns its VHDS
// init_fetch_timeout count.
func vhdsInitTimeouts(t *testing.T, cp *ControlPlane) string {
	t.Helper()
	proc := envoyOn(t, protocol.Delta, cp, bootstrap.Params{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, proc.WaitReady(ctx))
	v, err := proc.Stat(ctx, "http.quote.rds.vhds.quote-route.init_fetch_timeout")
	require.NoError(t, err)
	return v
}

// vhdsSetWithFetchTimeout is the teaching state on demand (VHDS), its vhds config source
// with a 1 s initial_fetch_timeout.
func vhdsSetWithFetchTimeout(t *testing.T, listenerPort int) *resources.Set {
	t.Helper()
	built, err := resources.Build(resources.State{Version: "1", InventoryPort: 18080, ListenerPort: listenerPort, OnDemand: resources.OnDemand{VirtualHosts: true}})
	require.NoError(t, err)
	var rs []resources.Resource
	for _, typ := range resources.Types {
		for _, r := range built.ByType[typ].All() {
			if typ == resources.RDS {
				rc := &route.RouteConfiguration{Name: r.Name, Vhds: &route.Vhds{ConfigSource: &core.ConfigSource{
					ResourceApiVersion:    core.ApiVersion_V3,
					InitialFetchTimeout:   durationpb.New(time.Second),
					ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}},
				}}}
				r = resources.Resource{Type: typ, Name: r.Name, Resource: rc}
			}
			rs = append(rs, r)
		}
	}
	set, err := resources.NewSet("1", rs, nil)
	require.NoError(t, err)
	return set
}
