package resources

import (
	"testing"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	router "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// apiListenerHCM unpacks the proxyless listener's HTTP connection manager.
func apiListenerHCM(t *testing.T, l *listener.Listener) *hcm.HttpConnectionManager {
	t.Helper()
	require.NotNil(t, l.GetApiListener(), "the proxyless listener is an api_listener")
	m := &hcm.HttpConnectionManager{}
	require.NoError(t, l.GetApiListener().GetApiListener().UnmarshalTo(m))
	return m
}

// The proxyless shape passes, field by field, the checks grpc-go v1.85.0 makes before it
// ACKs (internal/xds/xdsclient/xdsresource): the end-to-end test in
// experiments/grpcclient shows the real client ACKing it.
func TestProxylessShapeIsWhatGRPCAccepts(t *testing.T) {
	t.Parallel()
	set := build(t, State{Version: "1", InventoryPort: 18080, Proxyless: true, ServerName: "lab"})
	for _, typ := range CoreTypes {
		require.Equal(t, 1, set.ByType[typ].Len(), typ)
		assert.NoError(t, Validate(set.ByType[typ].At(0).Resource), "%s passes Envoy's own validation too", typ)
	}
	l := set.ByType[LDS].At(0).Resource.(*listener.Listener)
	assert.Equal(t, ListenerName, l.GetName(), "named as the target the client dials")
	assert.Equal(t, "xds:///"+l.GetName(), ProxylessTarget)
	assert.Nil(t, l.GetAddress(), "no socket: processListener takes the client side only for an api_listener")
	assert.Empty(t, l.GetFilterChains())

	// unmarshal_lds.go, processClientSideListener.
	m := apiListenerHCM(t, l)
	assert.Zero(t, m.GetXffNumTrustedHops(), "xff_num_trusted_hops must be unset or zero")
	assert.Empty(t, m.GetOriginalIpDetectionExtensions())
	assert.NotNil(t, m.GetRds().GetConfigSource().GetAds(), "LDS's RDS configSource must be ADS or Self")
	assert.Equal(t, RouteName, m.GetRds().GetRouteConfigName())
	assert.Empty(t, m.GetAccessLog())
	// processHTTPFilters: named, no duplicates, the last one terminal (the router is
	// the only filter grpc-go knows here).
	require.Len(t, m.GetHttpFilters(), 1)
	f := m.GetHttpFilters()[0]
	assert.NotEmpty(t, f.GetName())
	assert.True(t, f.GetTypedConfig().MessageIs(&router.Router{}), "the router, type %s", f.GetTypedConfig().GetTypeUrl())

	// unmarshal_rds.go, routesProtoToSlice: every route has a match with a path specifier
	// and a cluster.
	rc := set.ByType[RDS].At(0).Resource.(*route.RouteConfiguration)
	for _, r := range rc.GetVirtualHosts()[0].GetRoutes() {
		assert.NotNil(t, r.GetMatch().GetPathSpecifier())
		assert.NotEmpty(t, r.GetRoute().GetCluster())
	}
	assert.Equal(t, []string{"*"}, rc.GetVirtualHosts()[0].GetDomains(), "matches the target's host")

	// unmarshal_cds.go, validateClusterAndConstructClusterUpdate: an EDS cluster over
	// ADS, round robin.
	c := set.ByType[CDS].At(0).Resource.(*cluster.Cluster)
	assert.Equal(t, cluster.Cluster_EDS, c.GetType())
	assert.NotNil(t, c.GetEdsClusterConfig().GetEdsConfig().GetAds())
	assert.Equal(t, cluster.Cluster_ROUND_ROBIN, c.GetLbPolicy())

	// unmarshal_eds.go, parseEDSRespProto: every locality has an ID and a weight.
	cla := set.ByType[EDS].At(0).Resource.(*endpoint.ClusterLoadAssignment)
	for _, loc := range cla.GetEndpoints() {
		assert.NotNil(t, loc.GetLocality(), "a locality without ID is NACKed")
		assert.EqualValues(t, 1, loc.GetLoadBalancingWeight().GetValue(), "weight 0 (unset) is ignored")
	}

	_, err := set.Snapshot(UniformVersions("1"))
	require.NoError(t, err, "consistent: the api_listener references the route configuration")
}

// Only the listener differs between the shapes: both clients are served the same
// routes, clusters and endpoints, byte for byte.
func TestProxylessChangesOnlyTheListener(t *testing.T) {
	t.Parallel()
	envoy := build(t, State{Version: "1", InventoryPort: 18080, Clusters: 3})
	grpc := build(t, State{Version: "1", InventoryPort: 18080, Clusters: 3, Proxyless: true})
	for _, typ := range []Type{RDS, CDS, EDS} {
		assert.Equal(t, envoy.Hashes(typ), grpc.Hashes(typ), typ)
	}
	assert.NotEqual(t, envoy.Hashes(LDS), grpc.Hashes(LDS))
	assert.Equal(t, []string{"~LDS/" + ListenerName}, editNames(Diff(envoy, grpc)))
}

// The deliberately invalid route is built in the proxyless shape too: grpc-go NACKs it
// ("doesn't have a path specifier", routesProtoToSlice) as Envoy does.
func TestProxylessInvalidRoute(t *testing.T) {
	t.Parallel()
	set := build(t, State{Version: "3", InventoryPort: 18080, Proxyless: true, InvalidRoute: true})
	assert.Equal(t, []string{RouteName}, set.Invalid)
	rc := set.ByType[RDS].At(0).Resource.(*route.RouteConfiguration)
	assert.Nil(t, rc.GetVirtualHosts()[0].GetRoutes()[0].GetMatch().GetPathSpecifier())
	_, err := set.Snapshot(UniformVersions("3"))
	assert.NoError(t, err)
}

func TestProxylessRefusesWhatGRPCCannotCarry(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]State{
		"on demand":  {Version: "1", InventoryPort: 18080, Proxyless: true, OnDemand: OnDemand{Clusters: true}},
		"access log": {Version: "1", InventoryPort: 18080, Proxyless: true, AccessLogPath: "/tmp/access.log"},
	} {
		_, err := Build(s)
		assert.ErrorContains(t, err, "proxyless", name)
	}
	for name, spec := range map[string]ListenerSpec{
		"on demand":  {Name: "l", RouteName: "r", Proxyless: true, OnDemand: OnDemand{VirtualHosts: true}},
		"access log": {Name: "l", RouteName: "r", Proxyless: true, AccessLogPath: "/tmp/access.log"},
	} {
		_, err := BuildListener(spec)
		assert.ErrorContains(t, err, "proxyless", name)
	}
	l, err := BuildListener(ListenerSpec{Name: "l", RouteName: "r", Proxyless: true})
	require.NoError(t, err)
	assert.Equal(t, "r", apiListenerHCM(t, l).GetRds().GetRouteConfigName())
	assert.Equal(t, StatPrefix, apiListenerHCM(t, l).GetStatPrefix())
}

// Validate looks inside the api_listener as it does inside a filter chain.
func TestValidateLooksInsideTheAPIListener(t *testing.T) {
	t.Parallel()
	bad, err := deterministicAny(&hcm.HttpConnectionManager{}) // no stat_prefix, no route specifier
	require.NoError(t, err)
	l := &listener.Listener{Name: "l", ApiListener: &listener.ApiListener{ApiListener: bad}}
	assert.ErrorContains(t, Validate(l), "api_listener")
}

// The proxyless consistency check finds what the library's finds.
func TestProxylessConsistency(t *testing.T) {
	t.Parallel()
	set := build(t, State{Version: "1", InventoryPort: 18080, Proxyless: true})
	stray := proto.Clone(set.ByType[RDS].At(0).Resource).(*route.RouteConfiguration)
	stray.Name = "stray"
	set.ByType[RDS] = set.ByType[RDS].appended(Resource{Type: RDS, Name: "stray", Resource: stray})
	_, err := set.Snapshot(UniformVersions("1"))
	assert.ErrorContains(t, err, "RDS")

	set = build(t, State{Version: "1", InventoryPort: 18080, Proxyless: true})
	set.ByType[EDS] = set.ByType[EDS].appended(Resource{Type: EDS, Name: "lost", Resource: BuildEndpoints("lost", 1)})
	_, err = set.Snapshot(UniformVersions("1"))
	assert.ErrorContains(t, err, `EDS`)
}

// CheckProxyless takes the proxyless shape and refuses a socket listener, a listener
// without either, and an api_listener holding something else, each naming grpc-go's
// source.
func TestCheckProxyless(t *testing.T) {
	t.Parallel()
	ok := build(t, State{Version: "1", InventoryPort: 18080, Proxyless: true}).ByType[LDS].At(0).Resource.(*listener.Listener)
	require.NoError(t, CheckProxyless(ok))

	socket := build(t, State{Version: "1", InventoryPort: 18080, ListenerPort: 19000}).ByType[LDS].At(0).Resource.(*listener.Listener)
	other, err := deterministicAny(&route.RouteConfiguration{Name: "r"})
	require.NoError(t, err)
	for name, c := range map[string]struct {
		l    *listener.Listener
		want string
	}{
		"socket":     {socket, `listener "quote-listener" is a socket listener (an address, no api_listener): a proxyless gRPC client needs an api_listener holding an HttpConnectionManager (grpc-go ACKs`},
		"neither":    {&listener.Listener{Name: "bare"}, `listener "bare" has no api_listener: `},
		"not an HCM": {&listener.Listener{Name: "l", ApiListener: &listener.ApiListener{ApiListener: other}}, `listener "l": its api_listener holds type.googleapis.com/envoy.config.route.v3.RouteConfiguration: `},
	} {
		t.Run(name, func(t *testing.T) {
			err := CheckProxyless(c.l)
			require.ErrorIs(t, err, ErrNotAPIListener)
			assert.ErrorContains(t, err, c.want)
			assert.ErrorContains(t, err, "unmarshal_lds.go, processListener")
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}
