package indexcache_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/log"
	rsrc "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	sotwserver "github.com/envoyproxy/go-control-plane/pkg/server/sotw/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xds-workbench/lab/shared/bufconntest"
	"github.com/xds-workbench/lab/shared/indexcache"
)

// The differential test: seeded random sequences of publishes (add, modify, delete in
// LDS, RDS, CDS, EDS, VHDS), SotW and delta requests (named, wildcard, "*", subscribe and
// unsubscribe, names the cache lacks), ACKs and NACKs, and reconnects (SotW with the
// last version_info, delta with initial_resource_versions), applied alike to
// go-control-plane's LinearCache (one per type behind a MuxCache, as
// publish.LinearPublisher builds it) and to the indexed cache, each served by the
// library's own ADS server (pkg/server/v3, ordered ADS as the workbench's sotw package
// runs it) over bufconn. After every step each client
// collects what both servers sent and the two must agree response by response: whether
// one is sent at all, its type, its resources by name and content hash, its removals,
// and (delta) each resource's version, which is the content hash in both caches. SotW
// version_info strings are the caches' own counters, so they are compared only for
// "moved or not" against the previous response of that type on the same side.
//
// "No response" is decided without timers: a probe type, answered at once by both
// servers, is requested after each step; the library's ADS loops send every response
// already queued before they handle a new request (pkg/server/delta/v3 processAll;
// pkg/server/sotw/v3 processAllExcept, for a type with an open watch), so the probe's
// answer comes after every response the step caused. ACKs may cause more: the round
// repeats until one brings nothing.
//
// It can fail: TestDifferentialCatchesABrokenCache runs the same sequence against an
// indexed cache that drops removals (indexcache.BreakForTest), and must see a difference.

// VirtualHost (VHDS) is served by the indexed cache like the others (the workbench puts
// publish.OnDemandCache's named-only rules in front of it, tested there).
var diffTypes = []string{rsrc.ListenerType, rsrc.RouteType, rsrc.ClusterType, rsrc.EndpointType, rsrc.VirtualHostType}

const probeType = "type.googleapis.com/workbench.Probe"

func TestDifferentialLinearVsIndexed(t *testing.T) {
	t.Parallel()
	for _, delta := range []bool{false, true} {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", modeName(delta), seed), func(t *testing.T) {
				if diffs := runDifferential(t, delta, seed, 300, false); len(diffs) > 0 {
					t.Fatalf("%d differences, the first: %s", len(diffs), diffs[0])
				}
			})
		}
	}
}

func TestDifferentialCatchesABrokenCache(t *testing.T) {
	t.Parallel()
	for _, delta := range []bool{false, true} {
		t.Run(modeName(delta), func(t *testing.T) {
			diffs := runDifferential(t, delta, 1, 300, true)
			require.NotEmpty(t, diffs, "an indexed cache that drops removals must differ from the LinearCache")
		})
	}
}

func modeName(delta bool) string {
	if delta {
		return "delta"
	}
	return "sotw"
}

// side is one server: the LinearCaches or the indexed cache.
type side struct {
	update func(typ string, set map[string]types.Resource, del []string)
	conn   *grpc.ClientConn
}

func newSides(t *testing.T, broken bool) [2]*side {
	prefix := "p."
	linear := map[string]*cachev3.LinearCache{}
	byURL := map[string]cachev3.Cache{}
	for _, u := range diffTypes {
		linear[u] = cachev3.NewLinearCache(u, cachev3.WithVersionPrefix(prefix), cachev3.WithLogger(log.LoggerFuncs{}))
		byURL[u] = linear[u]
	}
	mux := &cachev3.MuxCache{Classify: func(r *cachev3.Request) string { return r.GetTypeUrl() },
		ClassifyDelta: func(r *cachev3.DeltaRequest) string { return r.GetTypeUrl() }, Caches: byURL}
	idx := indexcache.New(prefix, diffTypes...)
	if broken {
		indexcache.BreakForTest(idx)
	}
	lin := &side{update: func(typ string, set map[string]types.Resource, del []string) {
		require.NoError(t, linear[typ].UpdateResources(set, del))
	}}
	ind := &side{update: func(typ string, set map[string]types.Resource, del []string) {
		require.NoError(t, idx.Update(typ, set, del))
	}}
	lin.conn, ind.conn = serveCache(t, probed{mux}), serveCache(t, probed{idx})
	return [2]*side{lin, ind}
}

func serveCache(t *testing.T, c cachev3.Cache) *grpc.ClientConn {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return bufconntest.ServeGRPC(t, func(srv *grpc.Server) {
		discovery.RegisterAggregatedDiscoveryServiceServer(srv, serverv3.NewServer(ctx, c, nil, sotwserver.WithOrderedADS()))
	}).Dial(t)
}

// probed answers the probe type at once and passes everything else to the cache.
type probed struct{ cachev3.Cache }

func (p probed) CreateWatch(req *cachev3.Request, sub cachev3.Subscription, ch chan cachev3.Response) (func(), error) {
	if req.GetTypeUrl() != probeType {
		return p.Cache.CreateWatch(req, sub, ch)
	}
	ch <- &cachev3.PassthroughResponse{Request: req, DiscoveryResponse: &discovery.DiscoveryResponse{TypeUrl: probeType, VersionInfo: "probe"}, ReturnedResources: map[string]string{}}
	return func() {}, nil
}

func (p probed) CreateDeltaWatch(req *cachev3.DeltaRequest, sub cachev3.Subscription, ch chan cachev3.DeltaResponse) (func(), error) {
	if req.GetTypeUrl() != probeType {
		return p.Cache.CreateDeltaWatch(req, sub, ch)
	}
	ch <- &cachev3.DeltaPassthroughResponse{DeltaRequest: req, DeltaDiscoveryResponse: &discovery.DeltaDiscoveryResponse{TypeUrl: probeType}, NextVersionMap: map[string]string{}}
	return nil, nil
}

// resourceFor builds a resource of typ named name whose content depends on gen.
func resourceFor(typ, name string, gen int) types.Resource {
	port := uint32(10000 + gen)
	switch typ {
	case rsrc.ListenerType:
		return &listener.Listener{Name: name, Address: &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{Address: "127.0.0.1", PortSpecifier: &core.SocketAddress_PortValue{PortValue: port}}}}}
	case rsrc.RouteType:
		return &route.RouteConfiguration{Name: name, VirtualHosts: []*route.VirtualHost{{Name: fmt.Sprint("vh", gen), Domains: []string{"*"}}}}
	case rsrc.ClusterType:
		return &cluster.Cluster{Name: name, ConnectTimeout: durationpb.New(time.Duration(gen%1000+1) * time.Millisecond)}
	case rsrc.VirtualHostType:
		return &route.VirtualHost{Name: name, Domains: []string{fmt.Sprint("host-", gen)}}
	default:
		return &endpoint.ClusterLoadAssignment{ClusterName: name, Endpoints: []*endpoint.LocalityLbEndpoints{{LbEndpoints: []*endpoint.LbEndpoint{{HostIdentifier: &endpoint.LbEndpoint_Endpoint{Endpoint: &endpoint.Endpoint{Address: &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{Address: "127.0.0.1", PortSpecifier: &core.SocketAddress_PortValue{PortValue: port}}}}}}}}}}}
	}
}

// pool is the names a step picks from: "r0".."r4" per type, plus one never published.
func pool(typ string) []string {
	short := typ[strings.LastIndex(typ, ".")+1:]
	out := make([]string, 6)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", short, i)
	}
	return out
}

// runDifferential runs steps random steps and returns the differences found.
func runDifferential(t *testing.T, delta bool, seed uint64, steps int, broken bool) []string {
	rng := rand.New(rand.NewPCG(seed, 23))
	sides := newSides(t, broken)
	clients := []*pair{newPair(t, sides, delta), newPair(t, sides, delta)}
	var diffs []string
	gen := 0
	for step := 0; step < steps; step++ {
		what := ""
		switch k := rng.IntN(10); {
		case k < 4:
			gen++
			what = publish(rng, sides, gen)
		case k < 9:
			c := clients[rng.IntN(len(clients))]
			what = c.request(rng)
		default:
			c := clients[rng.IntN(len(clients))]
			what = "reconnect"
			c.reconnect()
		}
		for i, c := range clients {
			if d := c.settle(rng); d != "" {
				diffs = append(diffs, fmt.Sprintf("step %d (%s), client %d: %s", step, what, i, d))
			}
		}
	}
	return diffs
}

// publish changes one type alike on both sides: some names set (new content), some
// deleted.
func publish(rng *rand.Rand, sides [2]*side, gen int) string {
	typ := diffTypes[rng.IntN(len(diffTypes))]
	set := map[string]types.Resource{}
	var del []string
	for _, n := range pool(typ)[:5] {
		switch rng.IntN(4) {
		case 0:
			set[n] = resourceFor(typ, n, gen)
		case 1:
			del = append(del, n)
		}
	}
	for _, s := range sides {
		s.update(typ, set, del)
	}
	return fmt.Sprintf("publish %s set %d delete %v", typ, len(set), del)
}
