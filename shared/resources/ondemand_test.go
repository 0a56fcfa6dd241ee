package resources

import (
	"testing"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	ondemand "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/on_demand/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseOnDemand(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]OnDemand{
		"": {}, "none": {}, "vhds": {VirtualHosts: true}, "cds": {Clusters: true},
		"vhds,cds": {VirtualHosts: true, Clusters: true}, "cds, vhds": {VirtualHosts: true, Clusters: true},
	} {
		got, err := ParseOnDemand(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := ParseOnDemand("vhds,rds")
	assert.EqualError(t, err, `unknown part "rds" (want vhds, cds, vhds,cds or none)`)
	assert.Equal(t, "vhds,cds", OnDemand{VirtualHosts: true, Clusters: true}.String())
	assert.Equal(t, "none", OnDemand{}.String())
	assert.ErrorIs(t, OnDemand{Clusters: true}.CheckMode(true), ErrOnDemandNeedsDelta)
	assert.NoError(t, OnDemand{Clusters: true}.CheckMode(false))
	assert.NoError(t, OnDemand{}.CheckMode(true))
}

// hcmOf unpacks the listener's HTTP connection manager.
func hcmOf(t *testing.T, set *Set) *hcm.HttpConnectionManager {
	t.Helper()
	l := set.ByType[LDS].At(0).Resource.(*listener.Listener)
	m := &hcm.HttpConnectionManager{}
	require.NoError(t, l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(m))
	return m
}

func TestOnDemandShape(t *testing.T) {
	t.Parallel()
	set := build(t, State{Version: "1", InventoryPort: 18080, Clusters: 3, OnDemand: OnDemand{VirtualHosts: true, Clusters: true}})
	rc := set.ByType[RDS].At(0).Resource.(*route.RouteConfiguration)
	assert.NotNil(t, rc.GetVhds().GetConfigSource().GetAds(), "vhds over ADS")
	assert.Empty(t, rc.GetVirtualHosts(), "no inline virtual hosts")
	require.Equal(t, 3, set.ByType[VHDS].Len())
	for i, r := range set.ByType[VHDS].All() {
		vh := r.Resource.(*route.VirtualHost)
		assert.Equal(t, "quote-route/"+ServiceHost(i), r.Name)
		assert.Equal(t, []string{ServiceHost(i)}, vh.GetDomains())
		assert.Equal(t, ScaledPath(i), vh.GetRoutes()[0].GetMatch().GetPath())
		assert.Equal(t, ScaledClusterName(i), vh.GetRoutes()[0].GetRoute().GetCluster())
	}
	filters := hcmOf(t, set).GetHttpFilters()
	require.Len(t, filters, 2)
	assert.Equal(t, "envoy.filters.http.on_demand", filters[0].GetName(), "on_demand before the router")
	od := &ondemand.OnDemand{}
	require.NoError(t, filters[0].GetTypedConfig().UnmarshalTo(od))
	assert.NotNil(t, od.GetOdcds().GetSource().GetAds())
	assert.Equal(t, int64(5), od.GetOdcds().GetTimeout().GetSeconds())

	vhOnly := build(t, State{Version: "1", InventoryPort: 18080, OnDemand: OnDemand{VirtualHosts: true}})
	require.Equal(t, 1, vhOnly.ByType[VHDS].Len())
	assert.Equal(t, "quote-route/quote", vhOnly.ByType[VHDS].At(0).Name)
	od = &ondemand.OnDemand{}
	require.NoError(t, hcmOf(t, vhOnly).GetHttpFilters()[0].GetTypedConfig().UnmarshalTo(od))
	assert.Nil(t, od.GetOdcds(), "no odcds when only routes are on demand")

	inline := build(t, State{Version: "1", InventoryPort: 18080, Clusters: 3})
	assert.Len(t, hcmOf(t, inline).GetHttpFilters(), 1, "router alone without on-demand")

	_, err := Build(State{Version: "1", InventoryPort: 18080, InvalidRoute: true, OnDemand: OnDemand{VirtualHosts: true}})
	assert.ErrorContains(t, err, "not built with routes on demand")
}

// Adding a service in the VHDS shape changes one virtual host, one cluster and one
// assignment (the target of issue 22: at most 3 resources), not the route configuration.
func TestOnDemandRebuildIsPerService(t *testing.T) {
	t.Parallel()
	od := OnDemand{VirtualHosts: true}
	prev := build(t, State{Version: "1", InventoryPort: 18080, Clusters: 100, OnDemand: od})
	next, err := Rebuild(prev, State{Version: "2", InventoryPort: 18080, Clusters: 101, OnDemand: od})
	require.NoError(t, err)
	var names []string
	for _, e := range Diff(prev, next).Edits {
		assert.Nil(t, e.Old)
		names = append(names, string(e.Type)+"/"+e.Name)
	}
	assert.ElementsMatch(t, []string{"CDS/inventory-0100", "EDS/inventory-0100", "VHDS/quote-route/svc-0100"}, names)
	assertSameAsBuild(t, next, State{Version: "2", InventoryPort: 18080, Clusters: 101, OnDemand: od})

	moved, err := Rebuild(next, State{Version: "3", InventoryPort: 18080, Clusters: 101, OnDemand: od, RouteTargets: map[int]int{7: 8}})
	require.NoError(t, err)
	c := Diff(next, moved)
	require.Len(t, c.Edits, 1)
	assert.Equal(t, "quote-route/svc-0007", c.Edits[0].Name)
	assertSameAsBuild(t, moved, State{Version: "3", InventoryPort: 18080, Clusters: 101, OnDemand: od, RouteTargets: map[int]int{7: 8}})

	fewer, err := Rebuild(moved, State{Version: "4", InventoryPort: 18080, Clusters: 99, OnDemand: od, RouteTargets: map[int]int{7: 8}})
	require.NoError(t, err)
	assert.Equal(t, 99, fewer.ByType[VHDS].Len())
	assertSameAsBuild(t, fewer, State{Version: "4", InventoryPort: 18080, Clusters: 99, OnDemand: od, RouteTargets: map[int]int{7: 8}})
}

func assertSameAsBuild(t *testing.T, got *Set, s State) {
	t.Helper()
	want := build(t, s)
	for _, typ := range Types {
		assert.Equal(t, want.Hashes(typ), got.Hashes(typ), typ)
	}
}

func vhost(name string, domains ...string) Resource {
	return Resource{Type: VHDS, Name: name, Resource: &route.VirtualHost{Name: name, Domains: domains,
		Routes: []*route.Route{routeTo("/quote", "r", "c", false)}}}
}

func TestVirtualHostNamesAreChecked(t *testing.T) {
	t.Parallel()
	vhdsRoute := Resource{Type: RDS, Name: "quote-route", Resource: vhdsRouteConfig("quote-route")}
	inlineRoute := Resource{Type: RDS, Name: "inline", Resource: &route.RouteConfiguration{Name: "inline"}}
	for name, tc := range map[string]struct {
		rs   []Resource
		want string
	}{
		"no prefix":       {[]Resource{vhdsRoute, vhost("a.example", "a.example")}, `VHDS "a.example": a virtual host's name must be <route configuration>/<host>`},
		"wrong route":     {[]Resource{inlineRoute, vhost("inline/a", "a")}, `route configuration "inline" has no vhds`},
		"host not domain": {[]Resource{vhdsRoute, vhost("quote-route/a", "b")}, `host "a" is not among its domains [b]`},
		"domain twice":    {[]Resource{vhdsRoute, vhost("quote-route/a", "a", "shared"), vhost("quote-route/b", "b", "shared")}, `domain "shared" is claimed by two virtual hosts of quote-route`},
	} {
		_, err := NewSet("1", tc.rs, nil)
		assert.ErrorContains(t, err, tc.want, name)
	}
	set, err := NewSet("1", []Resource{vhdsRoute, vhost("quote-route/a", "a"), vhost("quote-route/b", "b")}, nil)
	require.NoError(t, err)
	assert.Equal(t, 2, set.ByType[VHDS].Len())
	// Before its route configuration is published, a virtual host is fine on its own.
	_, err = NewSet("1", []Resource{vhost("quote-route/a", "a")}, nil)
	assert.NoError(t, err)

	rt, host, ok := SplitVirtualHostName("team/a/quote-route/svc-1:8080")
	assert.True(t, ok)
	assert.Equal(t, "team/a/quote-route", rt)
	assert.Equal(t, "svc-1:8080", host)
	for _, bad := range []string{"x", "/x", "x/"} {
		_, _, ok := SplitVirtualHostName(bad)
		assert.False(t, ok, bad)
	}
}

func TestBuildVirtualHostAndVHDSRoute(t *testing.T) {
	t.Parallel()
	vh, err := BuildVirtualHost(VirtualHostSpec{Route: "r", Host: "a", Domains: []string{"a:19000"}, Rules: []RouteRule{{Prefix: "/", Cluster: "c"}}})
	require.NoError(t, err)
	assert.Equal(t, "r/a", vh.GetName())
	assert.Equal(t, []string{"a", "a:19000"}, vh.GetDomains())
	_, err = BuildVirtualHost(VirtualHostSpec{Route: "r", Host: "a/b"})
	assert.Error(t, err)
	rc, err := BuildRoute(RouteSpec{Name: "r", VHDS: true})
	require.NoError(t, err)
	assert.NotNil(t, rc.GetVhds())
	_, err = BuildRoute(RouteSpec{Name: "r", VHDS: true, Rules: []RouteRule{{Prefix: "/", Cluster: "c"}}})
	assert.ErrorContains(t, err, "give its routes as virtual hosts")
}

func TestHas(t *testing.T) {
	t.Parallel()
	set := build(t, State{Version: "1", InventoryPort: 18080, Clusters: 3, OnDemand: OnDemand{VirtualHosts: true}})
	assert.True(t, set.Has(VHDS, "quote-route/svc-0002"))
	assert.False(t, set.Has(VHDS, "quote-route/svc-0003"))
	assert.False(t, set.Has(CDS, "quote-route/svc-0002"), "by type")
	next, err := Rebuild(set, State{Version: "2", InventoryPort: 18080, Clusters: 4, OnDemand: OnDemand{VirtualHosts: true}})
	require.NoError(t, err)
	assert.True(t, next.Has(VHDS, "quote-route/svc-0003"), "a rebuilt set has its own index")
	assert.False(t, set.Has(VHDS, "quote-route/svc-0003"))
	var literal Set
	literal.ByType = map[Type]List{EDS: ListOf(Resource{Type: EDS, Name: "a"})}
	assert.True(t, literal.Has(EDS, "a"), "a set made by hand is searched")
}
