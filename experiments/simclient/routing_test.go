//lint:file-ignore SA1019 the legacy HeaderMatcher specifiers (exact_match) are tested on purpose: Envoy still honours them, so the simulated client does too.

package simclient

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	matcher "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
)

// ---- resource builders (Envoy v3 protobuf, as users write them) ----

func adsConfig() *core.ConfigSource {
	return &core.ConfigSource{ResourceApiVersion: core.ApiVersion_V3, ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}}}
}

func packed(t *testing.T, m *hcm.HttpConnectionManager) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	require.NoError(t, err)
	return a
}

func httpListener(t *testing.T, name string, m *hcm.HttpConnectionManager) *listener.Listener {
	t.Helper()
	return &listener.Listener{
		Name: name,
		Address: &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
			Address: "127.0.0.1", PortSpecifier: &core.SocketAddress_PortValue{PortValue: 10000},
		}}},
		FilterChains: []*listener.FilterChain{{Filters: []*listener.Filter{{
			Name:       "envoy.filters.network.http_connection_manager",
			ConfigType: &listener.Filter_TypedConfig{TypedConfig: packed(t, m)},
		}}}},
	}
}

func rdsListener(t *testing.T, name, routeConfig, server string) *listener.Listener {
	return httpListener(t, name, &hcm.HttpConnectionManager{
		StatPrefix:     name,
		ServerName:     server,
		RouteSpecifier: &hcm.HttpConnectionManager_Rds{Rds: &hcm.Rds{ConfigSource: adsConfig(), RouteConfigName: routeConfig}},
	})
}

func inlineListener(t *testing.T, name string, rc *route.RouteConfiguration) *listener.Listener {
	return httpListener(t, name, &hcm.HttpConnectionManager{
		StatPrefix:     name,
		RouteSpecifier: &hcm.HttpConnectionManager_RouteConfig{RouteConfig: rc},
	})
}

func edsCluster(name, service string) *cluster.Cluster {
	return &cluster.Cluster{
		Name:                 name,
		ConnectTimeout:       durationpb.New(1e9),
		ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_EDS},
		EdsClusterConfig:     &cluster.Cluster_EdsClusterConfig{EdsConfig: adsConfig(), ServiceName: service},
	}
}

func staticCluster(name string, ports ...int) *cluster.Cluster {
	return &cluster.Cluster{
		Name:                 name,
		ConnectTimeout:       durationpb.New(1e9),
		ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_STATIC},
		LoadAssignment:       assignmentOf(name, ports...),
	}
}

func lbEndpoint(port int) *endpoint.LbEndpoint {
	return &endpoint.LbEndpoint{HostIdentifier: &endpoint.LbEndpoint_Endpoint{Endpoint: &endpoint.Endpoint{
		Address: &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
			Address: "127.0.0.1", PortSpecifier: &core.SocketAddress_PortValue{PortValue: uint32(port)},
		}}},
	}}}
}

func assignmentOf(name string, ports ...int) *endpoint.ClusterLoadAssignment {
	cla := &endpoint.ClusterLoadAssignment{ClusterName: name}
	if len(ports) == 0 {
		return cla
	}
	loc := &endpoint.LocalityLbEndpoints{}
	for _, p := range ports {
		loc.LbEndpoints = append(loc.LbEndpoints, lbEndpoint(p))
	}
	cla.Endpoints = []*endpoint.LocalityLbEndpoints{loc}
	return cla
}

func exact(p string) *route.RouteMatch {
	return &route.RouteMatch{PathSpecifier: &route.RouteMatch_Path{Path: p}}
}

func prefix(p string) *route.RouteMatch {
	return &route.RouteMatch{PathSpecifier: &route.RouteMatch_Prefix{Prefix: p}}
}

func separated(p string) *route.RouteMatch {
	return &route.RouteMatch{PathSpecifier: &route.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: p}}
}

func withHeaders(m *route.RouteMatch, hs ...*route.HeaderMatcher) *route.RouteMatch {
	m.Headers = hs
	return m
}

func toCluster(name string, m *route.RouteMatch, clusterName string) *route.Route {
	return &route.Route{Name: name, Match: m, Action: &route.Route_Route{Route: &route.RouteAction{
		ClusterSpecifier: &route.RouteAction_Cluster{Cluster: clusterName},
	}}}
}

func direct(name string, m *route.RouteMatch, status uint32) *route.Route {
	return &route.Route{Name: name, Match: m, Action: &route.Route_DirectResponse{DirectResponse: &route.DirectResponseAction{Status: status}}}
}

func weighted(name string, m *route.RouteMatch, weights map[string]uint32, order ...string) *route.Route {
	wc := &route.WeightedCluster{}
	for _, n := range order {
		wc.Clusters = append(wc.Clusters, &route.WeightedCluster_ClusterWeight{Name: n, Weight: wrapperspb.UInt32(weights[n])})
	}
	return &route.Route{Name: name, Match: m, Action: &route.Route_Route{Route: &route.RouteAction{
		ClusterSpecifier: &route.RouteAction_WeightedClusters{WeightedClusters: wc},
	}}}
}

func stringHeader(name string, sm *matcher.StringMatcher) *route.HeaderMatcher {
	return &route.HeaderMatcher{Name: name, HeaderMatchSpecifier: &route.HeaderMatcher_StringMatch{StringMatch: sm}}
}

// ---- driving the client's accept path directly ----

func anys(t *testing.T, rs []types.Resource) []*anypb.Any {
	t.Helper()
	out := make([]*anypb.Any, len(rs))
	for i, r := range rs {
		a, err := anypb.New(r)
		require.NoError(t, err)
		out[i] = a
	}
	return out
}

// sotw hands the client one SotW response and requires an ACK; it returns every request
// the client would send (the ACK first, then any resubscriptions).
func sotw(t *testing.T, c *Client, typ resources.Type, version string, rs ...types.Resource) []*discovery.DiscoveryRequest {
	t.Helper()
	reqs := c.handleSotW(&discovery.DiscoveryResponse{TypeUrl: typ.URL(), VersionInfo: version, Nonce: string(typ) + version, Resources: anys(t, rs)})
	require.NotEmpty(t, reqs)
	require.Nil(t, reqs[0].GetErrorDetail(), "ACK expected for %s v%s", typ, version)
	return reqs
}

// delta is sotw for the delta protocol: rs are added or updated, removed are removed.
func delta(t *testing.T, c *Client, typ resources.Type, version string, removed []string, rs ...types.Resource) []*discovery.DeltaDiscoveryRequest {
	t.Helper()
	resp := &discovery.DeltaDiscoveryResponse{TypeUrl: typ.URL(), SystemVersionInfo: version, Nonce: string(typ) + version, RemovedResources: removed}
	for i, a := range anys(t, rs) {
		resp.Resources = append(resp.Resources, &discovery.Resource{Name: cachev3.GetResourceName(rs[i]), Version: version, Resource: a})
	}
	reqs := c.handleDelta(resp)
	require.NotEmpty(t, reqs)
	require.Nil(t, reqs[0].GetErrorDetail(), "ACK expected for %s v%s", typ, version)
	return reqs
}

func newClient(t *testing.T, mode protocol.Mode) *Client {
	t.Helper()
	c, err := New(mode, "")
	require.NoError(t, err)
	return c
}

// ---- the scenario most tests route through ----

const (
	portStable = 18001 + iota
	portCanary
	portExact
	portPrefix
	portAPI
	portStatic
	portService
)

func ep(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }

func fixture(t *testing.T) (clusters []types.Resource, assignments []types.Resource, listeners []types.Resource, routes []types.Resource) {
	clusters = []types.Resource{
		edsCluster("stable", ""), edsCluster("canary", ""), edsCluster("exact-c", ""), edsCluster("prefix-c", ""),
		edsCluster("api-c", ""),
		staticCluster("static-c", portStatic),
		edsCluster("svc-c", "svc-a"), // subscribes to and routes with svc-a
		edsCluster("warm-c", ""),     // its assignment never comes
		edsCluster("empty-c", ""),
	}
	assignments = []types.Resource{
		assignmentOf("stable", portStable), assignmentOf("canary", portCanary), assignmentOf("exact-c", portExact),
		assignmentOf("prefix-c", portPrefix), assignmentOf("api-c", portAPI), assignmentOf("svc-a", portService),
		assignmentOf("empty-c"),
		assignmentOf("svc-c", 18999), // named like the cluster, but not its service name: never used
	}
	main := &route.RouteConfiguration{Name: "main", VirtualHosts: []*route.VirtualHost{
		// Listed first on purpose: an exact domain wins over "*" whatever the order.
		{Name: "star", Domains: []string{"*"}, Routes: []*route.Route{direct("star", prefix("/"), 200)}},
		{Name: "wild", Domains: []string{"*.example.com"}, Routes: []*route.Route{direct("wild", prefix("/"), 203)}},
		{Name: "local", Domains: []string{"localhost", "127.0.0.1"}, Routes: []*route.Route{
			toCluster("exact", exact("/exact"), "exact-c"), // before the prefix that also matches it
			toCluster("prefix", prefix("/ex"), "prefix-c"),
			toCluster("api", separated("/api"), "api-c"),
			toCluster("shop-canary", withHeaders(prefix("/shop"), stringHeader("x-canary", &matcher.StringMatcher{MatchPattern: &matcher.StringMatcher_Exact{Exact: "1"}})), "canary"),
			toCluster("shop", prefix("/shop"), "stable"),
			toCluster("legacy-prod", withHeaders(exact("/legacy"), &route.HeaderMatcher{Name: "x-env", HeaderMatchSpecifier: &route.HeaderMatcher_ExactMatch{ExactMatch: "prod"}}), "canary"),
			toCluster("legacy", exact("/legacy"), "stable"),
			toCluster("user-be", withHeaders(exact("/user"), stringHeader("x-user", &matcher.StringMatcher{MatchPattern: &matcher.StringMatcher_Prefix{Prefix: "be"}})), "canary"),
			toCluster("user", exact("/user"), "stable"),
			direct("debug-off", withHeaders(exact("/debug"), &route.HeaderMatcher{Name: "x-debug", HeaderMatchSpecifier: &route.HeaderMatcher_PresentMatch{PresentMatch: true}, InvertMatch: true}), 204),
			direct("debug-on", withHeaders(exact("/debug"), &route.HeaderMatcher{Name: "x-debug", HeaderMatchSpecifier: &route.HeaderMatcher_PresentMatch{PresentMatch: true}}), 202),
			toCluster("not-prod", withHeaders(exact("/env"), &route.HeaderMatcher{Name: "x-env", HeaderMatchSpecifier: &route.HeaderMatcher_ExactMatch{ExactMatch: "prod"}, InvertMatch: true}), "canary"),
			toCluster("env", exact("/env"), "stable"),
			weighted("split", exact("/split"), map[string]uint32{"stable": 80, "canary": 20}, "stable", "canary"),
			toCluster("static", exact("/static"), "static-c"),
			toCluster("svc", exact("/svc"), "svc-c"),
			toCluster("warm", exact("/warm"), "warm-c"),
			toCluster("missing", exact("/missing"), "ghost"),
			{Name: "missing-404", Match: exact("/missing-404"), Action: &route.Route_Route{Route: &route.RouteAction{
				ClusterSpecifier:            &route.RouteAction_Cluster{Cluster: "ghost"},
				ClusterNotFoundResponseCode: route.RouteAction_NOT_FOUND,
			}}},
			{Name: "by-header", Match: exact("/by-header"), Action: &route.Route_Route{Route: &route.RouteAction{
				ClusterSpecifier: &route.RouteAction_ClusterHeader{ClusterHeader: "x-cluster"},
			}}},
			toCluster("empty", exact("/empty"), "empty-c"),
			direct("teapot", exact("/teapot"), 418),
		}},
	}}
	other := &route.RouteConfiguration{Name: "other", VirtualHosts: []*route.VirtualHost{
		{Name: "any", Domains: []string{"*"}, Routes: []*route.Route{direct("other", prefix("/"), 500)}},
	}}
	listeners = []types.Resource{
		// No HTTP connection manager: never takes requests, whatever its name.
		&listener.Listener{Name: "a-listener", FilterChains: []*listener.FilterChain{{}}},
		rdsListener(t, "m-listener", "main", "m-server"),
		rdsListener(t, "z-listener", "other", "z-server"), // higher name: never routes
	}
	return clusters, assignments, listeners, []types.Resource{main, other}
}

// loaded is a client that accepted the fixture in ADS order (SotW).
func loaded(t *testing.T) *Client {
	t.Helper()
	c := newClient(t, protocol.SotW)
	cds, eds, lds, rds := fixture(t)
	sotw(t, c, resources.CDS, "1", cds...)
	sotw(t, c, resources.EDS, "1", eds...)
	sotw(t, c, resources.LDS, "1", lds...)
	sotw(t, c, resources.RDS, "1", rds...)
	return c
}

func TestRouteRequest(t *testing.T) {
	c := loaded(t)
	for _, tc := range []struct {
		name     string
		req      Request
		status   int
		flags    string
		cluster  string
		endpoint string
		route    string
	}{
		{"exact path before a prefix that matches too", Request{Path: "/exact"}, 200, "-", "exact-c", ep(portExact), "exact"},
		{"query string stripped before matching", Request{Path: "/exact?sku=paper"}, 200, "-", "exact-c", ep(portExact), "exact"},
		{"prefix", Request{Path: "/exactly"}, 200, "-", "prefix-c", ep(portPrefix), "prefix"},
		{"path is case-sensitive", Request{Path: "/EXACT"}, 404, "NR", "", "", ""},
		{"path_separated_prefix itself", Request{Path: "/api"}, 200, "-", "api-c", ep(portAPI), "api"},
		{"path_separated_prefix segment", Request{Path: "/api/v1?x=1"}, 200, "-", "api-c", ep(portAPI), "api"},
		{"path_separated_prefix is not a string prefix", Request{Path: "/apis"}, 404, "NR", "", "", ""},
		{"header match goes to canary", Request{Path: "/shop", Headers: map[string]string{"x-canary": "1"}}, 200, "-", "canary", ep(portCanary), "shop-canary"},
		{"header names are case-insensitive", Request{Path: "/shop/cart", Headers: map[string]string{"X-Canary": "1"}}, 200, "-", "canary", ep(portCanary), "shop-canary"},
		{"other header value stays stable", Request{Path: "/shop", Headers: map[string]string{"x-canary": "2"}}, 200, "-", "stable", ep(portStable), "shop"},
		{"no header stays stable", Request{Path: "/shop"}, 200, "-", "stable", ep(portStable), "shop"},
		{"legacy exact_match", Request{Path: "/legacy", Headers: map[string]string{"x-env": "prod"}}, 200, "-", "canary", ep(portCanary), "legacy-prod"},
		{"legacy exact_match, other value", Request{Path: "/legacy", Headers: map[string]string{"x-env": "dev"}}, 200, "-", "stable", ep(portStable), "legacy"},
		{"string_match prefix", Request{Path: "/user", Headers: map[string]string{"x-user": "beta-42"}}, 200, "-", "canary", ep(portCanary), "user-be"},
		{"string_match prefix, no match", Request{Path: "/user", Headers: map[string]string{"x-user": "alpha"}}, 200, "-", "stable", ep(portStable), "user"},
		{"inverted present_match, header absent", Request{Path: "/debug"}, 204, "-", "", "", "debug-off"},
		{"present_match, header present", Request{Path: "/debug", Headers: map[string]string{"x-debug": ""}}, 202, "-", "", "", "debug-on"},
		{"inverted exact_match, other value", Request{Path: "/env", Headers: map[string]string{"x-env": "dev"}}, 200, "-", "canary", ep(portCanary), "not-prod"},
		{"inverted exact_match, same value", Request{Path: "/env", Headers: map[string]string{"x-env": "prod"}}, 200, "-", "stable", ep(portStable), "env"},
		{"inverted exact_match, header absent never matches", Request{Path: "/env"}, 200, "-", "stable", ep(portStable), "env"},
		{"inline STATIC cluster", Request{Path: "/static"}, 200, "-", "static-c", ep(portStatic), "static"},
		{"EDS service_name differs from the cluster name", Request{Path: "/svc"}, 200, "-", "svc-c", ep(portService), "svc"},
		{"warming EDS cluster", Request{Path: "/warm"}, 503, "NC", "warm-c", "", "warm"},
		{"missing cluster", Request{Path: "/missing"}, 503, "NC", "ghost", "", "missing"},
		{"missing cluster, cluster_not_found_response_code", Request{Path: "/missing-404"}, 404, "NC", "ghost", "", "missing-404"},
		{"cluster_header", Request{Path: "/by-header", Headers: map[string]string{"x-cluster": "canary"}}, 200, "-", "canary", ep(portCanary), "by-header"},
		{"cluster_header absent", Request{Path: "/by-header"}, 503, "NC", "", "", "by-header"},
		{"assignment with no endpoints", Request{Path: "/empty"}, 503, "UH", "empty-c", "", "empty"},
		{"direct_response", Request{Path: "/teapot"}, 418, "-", "", "", "teapot"},
		{"no route", Request{Path: "/nothing"}, 404, "NR", "", "", ""},
		{"another host takes the * virtual host", Request{Path: "/nothing", Headers: map[string]string{"Host": "other.test"}}, 200, "-", "", "", "star"},
		{"suffix wildcard beats *", Request{Path: "/", Headers: map[string]string{":authority": "api.example.com"}}, 203, "-", "", "", "wild"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.RouteRequest(tc.req)
			assert.Equal(t, Result{
				Status: tc.status, Flags: tc.flags, Listener: "m-listener", Route: tc.route,
				Cluster: tc.cluster, Endpoint: tc.endpoint, Server: "m-server", Simulated: true,
			}, r)
		})
	}
}

func TestWeightedClustersSplitByRequestID(t *testing.T) {
	c := loaded(t)
	counts := map[string]int{}
	for i := range 1000 {
		id := fmt.Sprintf("req-%d", i)
		r := c.RouteRequest(Request{Path: "/split", ID: id})
		require.Equal(t, 200, r.Status, id)
		counts[r.Cluster]++
		want := map[string]string{"stable": ep(portStable), "canary": ep(portCanary)}[r.Cluster]
		require.Equal(t, want, r.Endpoint, "the chosen cluster answers")
		require.Equal(t, r, c.RouteRequest(Request{Path: "/split", ID: id}), "one ID, one answer")
	}
	assert.Len(t, counts, 2, "both clusters answer: %v", counts)
	assert.InDelta(t, 800, counts["stable"], 100, "80/20 split: %v", counts)
	assert.Equal(t, c.Route("/split"), c.Route("/split"), "the empty ID is deterministic too")
}

func TestSeveralEndpointsChosenByRequestID(t *testing.T) {
	c := newClient(t, protocol.SotW)
	unhealthy := lbEndpoint(18103)
	unhealthy.HealthStatus = core.HealthStatus_UNHEALTHY
	heavy := lbEndpoint(18104)
	heavy.LoadBalancingWeight = wrapperspb.UInt32(3)
	backup := lbEndpoint(18105)
	lone := lbEndpoint(18106)
	lone.HealthStatus = core.HealthStatus_UNHEALTHY
	sotw(t, c, resources.CDS, "1", edsCluster("multi", ""), edsCluster("lone", ""))
	sotw(t, c, resources.EDS, "1",
		&endpoint.ClusterLoadAssignment{ClusterName: "multi", Endpoints: []*endpoint.LocalityLbEndpoints{
			{LbEndpoints: []*endpoint.LbEndpoint{lbEndpoint(18101), lbEndpoint(18102), unhealthy, heavy}},
			{Priority: 1, LbEndpoints: []*endpoint.LbEndpoint{backup}},
		}},
		// Its only host is unhealthy: below the panic threshold Envoy uses it anyway.
		&endpoint.ClusterLoadAssignment{ClusterName: "lone", Endpoints: []*endpoint.LocalityLbEndpoints{{LbEndpoints: []*endpoint.LbEndpoint{lone}}}},
	)
	sotw(t, c, resources.LDS, "1", inlineListener(t, "only", &route.RouteConfiguration{Name: "inline", VirtualHosts: []*route.VirtualHost{{
		Name: "all", Domains: []string{"*"}, Routes: []*route.Route{toCluster("multi", prefix("/multi"), "multi"), toCluster("lone", prefix("/lone"), "lone")},
	}}}))
	seen := map[string]int{}
	for i := range 500 {
		id := fmt.Sprintf("id-%d", i)
		r := c.RouteRequest(Request{Path: "/multi", ID: id})
		require.Equal(t, 200, r.Status)
		seen[r.Endpoint]++
		require.Equal(t, r.Endpoint, c.RouteRequest(Request{Path: "/multi", ID: id}).Endpoint, "one ID, one endpoint")
	}
	assert.Equal(t, []string{ep(18101), ep(18102), ep(18104)}, slices.Sorted(maps.Keys(seen)), "healthy priority-0 hosts only: %v", seen)
	assert.Greater(t, seen[ep(18104)], seen[ep(18101)], "load_balancing_weight 3 gets more: %v", seen)
	assert.Equal(t, ep(18106), c.Route("/lone").Endpoint, "panic mode: the unhealthy host still serves")
	assert.Equal(t, "envoy", c.Route("/lone").Server, "server_name unset: Envoy's default")
}

func TestNoListener(t *testing.T) {
	c := newClient(t, protocol.SotW)
	want := Result{Status: 0, Flags: "no_listener", Simulated: true}
	assert.Equal(t, want, c.Route("/quote"), "nothing accepted")
	sotw(t, c, resources.LDS, "1", &listener.Listener{Name: "tcp-only", FilterChains: []*listener.FilterChain{{}}})
	assert.Equal(t, want, c.Route("/quote"), "a listener without an HTTP connection manager does not route")
}

func TestInlineRouteConfig(t *testing.T) {
	c := newClient(t, protocol.Delta)
	delta(t, c, resources.CDS, "1", nil, staticCluster("web", 18200))
	reqs := delta(t, c, resources.LDS, "1", nil, inlineListener(t, "inline-listener", &route.RouteConfiguration{Name: "inline", VirtualHosts: []*route.VirtualHost{{
		Name: "web", Domains: []string{"localhost"}, Routes: []*route.Route{toCluster("web", prefix("/"), "web")},
	}}}))
	assert.Len(t, reqs, 1, "an inline route config needs no RDS subscription: %v", reqs)
	r := c.Route("/anything?x=1")
	assert.Equal(t, Result{Status: 200, Flags: "-", Listener: "inline-listener", Route: "web", Cluster: "web", Endpoint: ep(18200), Server: "envoy", Simulated: true}, r)
}

func TestSubscriptionsFollowEveryListenerAndServiceName(t *testing.T) {
	cds, _, lds, _ := fixture(t)
	wantEDS := []string{"api-c", "canary", "empty-c", "exact-c", "prefix-c", "stable", "svc-a", "warm-c"}
	wantRDS := []string{"main", "other"}

	t.Run("sotw", func(t *testing.T) {
		c := newClient(t, protocol.SotW)
		reqs := sotw(t, c, resources.CDS, "1", cds...)
		require.Len(t, reqs, 2)
		assert.Equal(t, resources.EDS.URL(), reqs[1].GetTypeUrl())
		assert.Equal(t, wantEDS, reqs[1].GetResourceNames(), "service names, not the STATIC cluster")
		reqs = sotw(t, c, resources.LDS, "1", lds...)
		require.Len(t, reqs, 2)
		assert.Equal(t, wantRDS, reqs[1].GetResourceNames(), "the RDS names of every listener")
	})
	t.Run("delta", func(t *testing.T) {
		c := newClient(t, protocol.Delta)
		reqs := delta(t, c, resources.CDS, "1", nil, cds...)
		require.Len(t, reqs, 2)
		assert.Equal(t, wantEDS, reqs[1].GetResourceNamesSubscribe())
		reqs = delta(t, c, resources.LDS, "1", nil, lds...)
		require.Len(t, reqs, 2)
		assert.Equal(t, wantRDS, reqs[1].GetResourceNamesSubscribe())
	})
}

// TestUpdatedClusterServesOldEndpointsWhileWarming: a cluster that was active keeps its
// last endpoints while its new version waits for its assignment; a new cluster does not
// route until its assignment arrives; a removed and re-added cluster is new again.
func TestUpdatedClusterServesOldEndpointsWhileWarming(t *testing.T) {
	for _, mode := range []protocol.Mode{protocol.SotW, protocol.Delta} {
		t.Run(mode.String(), func(t *testing.T) {
			c := newClient(t, mode)
			accept := func(typ resources.Type, version string, removed []string, rs ...types.Resource) {
				if mode == protocol.SotW {
					sotw(t, c, typ, version, rs...)
				} else {
					delta(t, c, typ, version, removed, rs...)
				}
			}
			accept(resources.LDS, "1", nil, inlineListener(t, "l", &route.RouteConfiguration{Name: "r", VirtualHosts: []*route.VirtualHost{{
				Name: "all", Domains: []string{"*"}, Routes: []*route.Route{toCluster("w", prefix("/"), "w")},
			}}}))
			accept(resources.CDS, "1", nil, edsCluster("w", "w-v1"))
			assert.Equal(t, "NC", c.Route("/").Flags, "new cluster warming")
			accept(resources.EDS, "1", nil, assignmentOf("w-v1", 18301))
			assert.Equal(t, ep(18301), c.Route("/").Endpoint)

			accept(resources.CDS, "2", nil, edsCluster("w", "w-v2"))
			r := c.Route("/")
			assert.Equal(t, 200, r.Status, "updated cluster: the old version still serves")
			assert.Equal(t, ep(18301), r.Endpoint)
			accept(resources.EDS, "2", nil, assignmentOf("w-v2", 18302))
			assert.Equal(t, ep(18302), c.Route("/").Endpoint, "warmed: the new assignment")

			if mode == protocol.SotW {
				accept(resources.CDS, "3", nil)
			} else {
				accept(resources.CDS, "3", []string{"w"})
			}
			assert.Equal(t, "NC", c.Route("/").Flags, "removed")
			accept(resources.CDS, "4", nil, edsCluster("w", "w-v3"))
			assert.Equal(t, "NC", c.Route("/").Flags, "re-added: a new cluster, warming")
		})
	}
}

// TestTeachingResources: the generic routing gives the teaching resources what the
// specific one did.
func TestTeachingResources(t *testing.T) {
	for _, st := range []resources.State{
		{Version: "1", InventoryPort: 18081},
		{Version: "1", InventoryPort: 18081, ServerName: "teaching"},
		{Version: "1", InventoryPort: 18081, Clusters: 3, RouteTargets: map[int]int{1: 2}, EndpointPorts: map[int]int{2: 18092}},
		{Version: "1", InventoryPort: 18081, InventoryRemoved: true},
	} {
		t.Run(fmt.Sprintf("%+v", st), func(t *testing.T) {
			set, err := resources.Build(st)
			require.NoError(t, err)
			c := newClient(t, protocol.SotW)
			for _, typ := range resources.Types {
				var rs []types.Resource
				for _, r := range set.ByType[typ].All() {
					rs = append(rs, r.Resource)
				}
				sotw(t, c, typ, "1", rs...)
			}
			server := "envoy"
			if st.ServerName != "" {
				server = st.ServerName
			}
			path, clusterName, endpoint := resources.QuotePath+"?sku=paper", resources.ClusterName, ep(18081)
			if st.Clusters > 0 {
				path, clusterName, endpoint = resources.ScaledPath(1), resources.ScaledClusterName(2), ep(18092)
			}
			want := Result{Status: 200, Flags: "-", Listener: resources.ListenerName, Route: clusterName, Cluster: clusterName, Endpoint: endpoint, Server: server, Simulated: true}
			if st.Clusters > 0 {
				want.Route = resources.ScaledClusterName(1)
			}
			if st.InventoryRemoved {
				want.Status, want.Flags, want.Endpoint = 503, "NC", ""
			}
			assert.Equal(t, want, c.Route(path))
			assert.Equal(t, 404, c.Route("/other").Status)
		})
	}
}

// TestMalformedInputDoesNotPanic puts what validation would normally keep out straight
// into the accepted state: nil resources and messages, missing fields.
func TestMalformedInputDoesNotPanic(t *testing.T) {
	c := newClient(t, protocol.SotW)
	var nilListener *listener.Listener
	var nilRoute *route.RouteConfiguration
	var nilCluster *cluster.Cluster
	var nilCLA *endpoint.ClusterLoadAssignment
	c.state.Accepted[resources.LDS] = map[string]Entry{
		"0-nil":       {},
		"1-typed-nil": {Resource: nilListener},
		"2-no-config": {Resource: &listener.Listener{FilterChains: []*listener.FilterChain{nil, {Filters: []*listener.Filter{nil, {Name: "x"}}}}}},
		"3-rds":       {Resource: rdsListener(t, "3-rds", "rc", "")},
	}
	assert.Equal(t, 404, c.Route("/").Status, "RDS not accepted yet")
	c.state.Accepted[resources.RDS] = map[string]Entry{"rc": {Resource: nilRoute}}
	assert.Equal(t, 404, c.Route("/").Status, "typed-nil route configuration")
	c.state.Accepted[resources.RDS] = map[string]Entry{"rc": {Resource: &route.RouteConfiguration{VirtualHosts: []*route.VirtualHost{nil, {Domains: []string{"*"}, Routes: []*route.Route{
		nil,
		{Match: prefix("/n")}, // no action
		{Match: &route.RouteMatch{}, Action: &route.Route_Route{}},
		{Match: withHeaders(prefix("/h"), nil, &route.HeaderMatcher{Name: "x", HeaderMatchSpecifier: &route.HeaderMatcher_StringMatch{}}), Action: &route.Route_Route{}},
		{Match: &route.RouteMatch{PathSpecifier: &route.RouteMatch_SafeRegex{}}, Action: &route.Route_Route{}},
		{Match: &route.RouteMatch{PathSpecifier: &route.RouteMatch_SafeRegex{SafeRegex: &matcher.RegexMatcher{Regex: "(["}}}, Action: &route.Route_Route{}},
		{Match: &route.RouteMatch{PathSpecifier: &route.RouteMatch_Prefix{Prefix: "/q"}, QueryParameters: []*route.QueryParameterMatcher{nil}}, Action: &route.Route_Route{}},
		{Match: prefix("/d"), Action: &route.Route_DirectResponse{}},
		{Match: prefix("/r"), Action: &route.Route_Redirect{}},
		{Match: prefix("/w"), Action: &route.Route_Route{Route: &route.RouteAction{ClusterSpecifier: &route.RouteAction_WeightedClusters{WeightedClusters: &route.WeightedCluster{Clusters: []*route.WeightedCluster_ClusterWeight{nil, {Name: "z"}}}}}}},
		{Match: prefix("/x2"), Action: &route.Route_Route{Route: &route.RouteAction{ClusterSpecifier: &route.RouteAction_WeightedClusters{}}}},
		toCluster("", prefix("/c0"), "nil-cluster"),
		toCluster("", prefix("/c1"), "typed-nil-cluster"),
		toCluster("", prefix("/c2"), "bare"),
		toCluster("", prefix("/c3"), "bare-static"),
		toCluster("", prefix("/"), "holes"),
	}}}}}}
	c.state.Accepted[resources.CDS] = map[string]Entry{
		"nil-cluster":       {},
		"typed-nil-cluster": {Resource: nilCluster},
		"bare":              {Resource: &cluster.Cluster{Name: "bare", ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_EDS}}},
		"bare-static":       {Resource: &cluster.Cluster{Name: "bare-static"}},
		"holes":             {Resource: &cluster.Cluster{Name: "holes", ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_EDS}}},
	}
	c.state.Accepted[resources.EDS] = map[string]Entry{
		"bare": {Resource: nilCLA},
		"holes": {Resource: &endpoint.ClusterLoadAssignment{Endpoints: []*endpoint.LocalityLbEndpoints{nil, {LbEndpoints: []*endpoint.LbEndpoint{
			nil, {}, {HostIdentifier: &endpoint.LbEndpoint_Endpoint{}}, {HostIdentifier: &endpoint.LbEndpoint_EndpointName{EndpointName: "n"}},
		}}}}},
	}
	for _, p := range []string{"/", "/h", "/q?a=%zz", "/d", "/r", "/w", "/x2", "/n", "/c0", "/c1", "/c2", "/c3", "", "?", "#"} {
		r := c.RouteRequest(Request{Path: p, Headers: map[string]string{"": "", "x": "1"}, ID: p})
		assert.True(t, r.Simulated, p)
		assert.Equal(t, "3-rds", r.Listener, p)
		assert.NotEqual(t, 200, r.Status, "%s: nothing here is routable: %+v", p, r)
	}
	c.rememberEndpointsLocked() // malformed accepted state: must not panic either
}
