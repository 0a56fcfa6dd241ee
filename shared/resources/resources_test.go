package resources

import (
	"strings"
	"testing"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func build(t *testing.T, s State) *Set {
	t.Helper()
	set, err := Build(s)
	require.NoError(t, err)
	return set
}

func TestTeachingResources(t *testing.T) {
	t.Parallel()
	set := build(t, State{Version: "1", InventoryPort: 18080})
	assert.Zero(t, set.ByType[VHDS].Len(), "routes are inline unless on demand")
	for _, typ := range []Type{LDS, RDS, CDS, EDS} {
		require.Equal(t, 1, set.ByType[typ].Len(), typ)
		assert.NoError(t, Validate(set.ByType[typ].At(0).Resource), "%s validates", typ)
		assert.Len(t, set.ByType[typ].At(0).Hash, 64)
	}
	l := set.ByType[LDS].At(0).Resource.(*listener.Listener)
	assert.Equal(t, ListenerName, l.GetName())
	sa := l.GetAddress().GetSocketAddress()
	assert.Equal(t, "127.0.0.1", sa.GetAddress())
	assert.EqualValues(t, 19000, sa.GetPortValue())
	m := &hcm.HttpConnectionManager{}
	require.NoError(t, l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(m))
	assert.Equal(t, RouteName, m.GetRds().GetRouteConfigName())
	assert.NotNil(t, m.GetRds().GetConfigSource().GetAds(), "routes come from RDS over ADS")
	assert.Empty(t, m.GetAccessLog(), "no access log unless asked")

	rc := set.ByType[RDS].At(0).Resource.(*route.RouteConfiguration)
	r := rc.GetVirtualHosts()[0].GetRoutes()[0]
	assert.Equal(t, "/quote", r.GetMatch().GetPath(), "an exact path match: the query string is not part of it")
	assert.Equal(t, ClusterName, r.GetRoute().GetCluster())

	c := set.ByType[CDS].At(0).Resource.(*cluster.Cluster)
	assert.Equal(t, cluster.Cluster_EDS, c.GetType())
	assert.NotNil(t, c.GetEdsClusterConfig().GetEdsConfig().GetAds())
	cla := set.ByType[EDS].At(0).Resource.(*endpoint.ClusterLoadAssignment)
	ep := cla.GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
	assert.Equal(t, "127.0.0.1", ep.GetAddress())
	assert.EqualValues(t, 18080, ep.GetPortValue())

	_, err := set.Snapshot(UniformVersions("1"))
	assert.NoError(t, err)
	assert.Empty(t, set.Invalid)
}

// The invalid route passes Consistent but fails ValidateAll; it is the only exception.
func TestInvalidRouteIsPublishableButInvalid(t *testing.T) {
	t.Parallel()
	set := build(t, State{Version: "3", InventoryPort: 18081, InvalidRoute: true})
	assert.Equal(t, []string{RouteName}, set.Invalid)
	err := Validate(set.ByType[RDS].At(0).Resource)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "PathSpecifier")
	_, err = set.Snapshot(UniformVersions("3"))
	assert.NoError(t, err, "Consistent does not look at route matches")
	for _, typ := range []Type{LDS, CDS, EDS} {
		assert.NoError(t, Validate(set.ByType[typ].At(0).Resource))
	}
}

func TestRemovedInventoryStaysConsistent(t *testing.T) {
	t.Parallel()
	set := build(t, State{Version: "5", InventoryPort: 18080, InventoryRemoved: true})
	assert.Zero(t, set.ByType[CDS].Len())
	assert.Zero(t, set.ByType[EDS].Len())
	rc := set.ByType[RDS].At(0).Resource.(*route.RouteConfiguration)
	assert.Equal(t, ClusterName, rc.GetVirtualHosts()[0].GetRoutes()[0].GetRoute().GetCluster(), "the route still names the cluster")
	_, err := set.Snapshot(UniformVersions("5"))
	assert.NoError(t, err)
}

func TestInconsistentSnapshotRefused(t *testing.T) {
	t.Parallel()
	for _, drop := range []Type{RDS, EDS} {
		set := build(t, State{Version: "2", InventoryPort: 18080})
		delete(set.ByType, drop)
		_, err := set.Snapshot(UniformVersions("2"))
		require.Error(t, err, "without %s", drop)
		assert.Contains(t, err.Error(), "not consistent")
	}
	set := build(t, State{Version: "2", InventoryPort: 18080})
	_, err := set.Snapshot(map[Type]string{LDS: "2"})
	assert.ErrorContains(t, err, "no version for")
}

func TestBuildRefusesBadInput(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]State{
		"no version":        {InventoryPort: 18080},
		"port 0":            {Version: "1"},
		"port 70000":        {Version: "1", InventoryPort: 70000},
		"negative port":     {Version: "1", InventoryPort: -1},
		"listener 70000":    {Version: "1", InventoryPort: 18080, ListenerPort: 70000},
		"negative clusters": {Version: "1", InventoryPort: 18080, Clusters: -1},
		"override teaching": {Version: "1", InventoryPort: 18080, EndpointPorts: map[int]int{0: 18081}},
		"override outside":  {Version: "1", InventoryPort: 18080, Clusters: 2, EndpointPorts: map[int]int{2: 18081}},
		"override port 0":   {Version: "1", InventoryPort: 18080, Clusters: 2, EndpointPorts: map[int]int{1: 0}},
		"empty teaching":    {Version: "1", InventoryPort: 18080, UnlistedEmpty: true},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Build(s)
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestHashesAreDeterministicAndContentBased(t *testing.T) {
	t.Parallel()
	a := build(t, State{Version: "1", InventoryPort: 18080, AccessLogPath: "/tmp/a.log"})
	b := build(t, State{Version: "9", InventoryPort: 18080, AccessLogPath: "/tmp/a.log"})
	for _, typ := range Types {
		assert.Equal(t, a.Hashes(typ), b.Hashes(typ), "%s: the label is not part of the content", typ)
	}
	assert.Empty(t, b.ChangedTypes(a))
	assert.Equal(t, "no content change", b.Describe(a))

	c := build(t, State{Version: "2", InventoryPort: 18081, AccessLogPath: "/tmp/a.log"})
	assert.Equal(t, []Type{EDS}, c.ChangedTypes(a))
	assert.Equal(t, "EDS ~inventory", c.Describe(a))
	d := build(t, State{Version: "3", InventoryPort: 18080, AccessLogPath: "/tmp/b.log"})
	assert.Equal(t, []Type{LDS}, d.ChangedTypes(a), "the access-log path is listener content")
	e := build(t, State{Version: "4", InventoryPort: 18080, AccessLogPath: "/tmp/a.log", InventoryRemoved: true})
	assert.Equal(t, "CDS -inventory; EDS -inventory", e.Describe(a))
	assert.Equal(t, CoreTypes, a.ChangedTypes(nil), "the types the set has")
}

func TestScaledState(t *testing.T) {
	t.Parallel()
	set := build(t, State{Version: "1", InventoryPort: 18080, Clusters: 3})
	assert.Equal(t, 3, set.ByType[CDS].Len())
	assert.Equal(t, 3, set.ByType[EDS].Len())
	assert.Equal(t, []string{"inventory-0000", "inventory-0001", "inventory-0002"}, ClusterNames(State{Clusters: 3}))
	rc := set.ByType[RDS].At(0).Resource.(*route.RouteConfiguration)
	routes := rc.GetVirtualHosts()[0].GetRoutes()
	require.Len(t, routes, 3)
	assert.Equal(t, "/quote/2", routes[2].GetMatch().GetPath())
	assert.Equal(t, "inventory-0002", routes[2].GetRoute().GetCluster())

	moved := build(t, State{Version: "2", InventoryPort: 18080, Clusters: 3, EndpointPorts: map[int]int{1: 18081}})
	assert.Equal(t, []Type{EDS}, moved.ChangedTypes(set))
	before, after := set.Hashes(EDS), moved.Hashes(EDS)
	assert.Equal(t, before["inventory-0000"], after["inventory-0000"])
	assert.NotEqual(t, before["inventory-0001"], after["inventory-0001"], "only the overridden cluster's endpoints change")
	assert.True(t, strings.HasPrefix(moved.Describe(set), "EDS ~inventory-0001"))
}

// UnlistedEmpty: a cluster with an EndpointPorts entry keeps its endpoint, every other
// one gets an assignment with no endpoint; a move between the two is an EDS edit.
func TestUnlistedEmpty(t *testing.T) {
	t.Parallel()
	set := build(t, State{Version: "1", InventoryPort: 18080, Clusters: 3, EndpointPorts: map[int]int{0: 18081}, UnlistedEmpty: true})
	require.Equal(t, 3, set.ByType[EDS].Len())
	ports := map[string][]uint32{}
	for _, r := range set.ByType[EDS].All() {
		cla := r.Resource.(*endpoint.ClusterLoadAssignment)
		ports[r.Name] = nil
		for _, l := range cla.GetEndpoints() {
			for _, e := range l.GetLbEndpoints() {
				ports[r.Name] = append(ports[r.Name], e.GetEndpoint().GetAddress().GetSocketAddress().GetPortValue())
			}
		}
	}
	assert.Equal(t, map[string][]uint32{"inventory-0000": {18081}, "inventory-0001": nil, "inventory-0002": nil}, ports)

	moved, err := Rebuild(set, State{Version: "2", InventoryPort: 18080, Clusters: 3, EndpointPorts: map[int]int{0: 18081, 2: 18082}, UnlistedEmpty: true})
	require.NoError(t, err)
	assert.Equal(t, "EDS ~inventory-0002", moved.Describe(set))
	dead, err := Rebuild(moved, State{Version: "3", InventoryPort: 18080, Clusters: 3, EndpointPorts: map[int]int{0: 18081, 2: 18082}})
	require.NoError(t, err)
	assert.Equal(t, "EDS ~inventory-0001", dead.Describe(moved), "without UnlistedEmpty the unlisted cluster points at InventoryPort")
}

func TestTypeURLs(t *testing.T) {
	t.Parallel()
	for _, typ := range Types {
		got, ok := TypeOf(typ.URL())
		assert.True(t, ok)
		assert.Equal(t, typ, got)
	}
	_, ok := TypeOf("type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig")
	assert.False(t, ok)
	assert.Empty(t, Type("XDS").URL())
}

// The snapshot's version map is what the library would compute itself.
func TestSnapshotVersionMapIsTheLibrarys(t *testing.T) {
	t.Parallel()
	// On demand and TLS, so that every type has its one resource.
	set := build(t, State{Version: "1", InventoryPort: 18080, AccessLogPath: "/tmp/x.log", OnDemand: OnDemand{VirtualHosts: true},
		TLS: ListenerTLS{Secret: "quote-cert"}, Secrets: []SecretSpec{testSecret(t, "quote-cert", 101, false)}})
	ours, err := set.Snapshot(UniformVersions("1"))
	require.NoError(t, err)
	theirs, err := set.Snapshot(UniformVersions("1"))
	require.NoError(t, err)
	theirs.VersionMap = nil
	require.NoError(t, theirs.ConstructVersionMap())
	for _, typ := range Types {
		assert.Equal(t, theirs.GetVersionMap(typ.URL()), ours.GetVersionMap(typ.URL()), typ)
		assert.Len(t, ours.GetVersionMap(typ.URL()), 1)
	}
}

// The route and listener workloads of lab bench: a route pointed at another cluster, and
// the HTTP connection manager's server_name, each change exactly one resource.
func TestRouteTargetsAndServerName(t *testing.T) {
	t.Parallel()
	base := State{Version: "1", InventoryPort: 18080, Clusters: 3}
	moved := base
	moved.Version, moved.RouteTargets = "2", map[int]int{1: 2}
	a, b := build(t, base), build(t, moved)
	assert.Equal(t, []Type{RDS}, b.ChangedTypes(a))
	rs := b.ByType[RDS].At(0).Resource.(*route.RouteConfiguration).GetVirtualHosts()[0].GetRoutes()
	assert.Equal(t, ScaledClusterName(2), rs[1].GetRoute().GetCluster(), "route 1 goes to cluster 2")
	assert.Equal(t, ScaledClusterName(1), rs[1].GetName(), "the route keeps its own name")
	assert.Equal(t, ScaledClusterName(2), rs[2].GetRoute().GetCluster())

	named := base
	named.Version, named.ServerName = "3", "lab-2"
	c := build(t, named)
	assert.Equal(t, []Type{LDS}, c.ChangedTypes(a))
	m := &hcm.HttpConnectionManager{}
	require.NoError(t, c.ByType[LDS].At(0).Resource.(*listener.Listener).GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(m))
	assert.Equal(t, "lab-2", m.GetServerName())

	for _, bad := range []map[int]int{{3: 0}, {0: 3}, {-1: 0}} {
		s := base
		s.RouteTargets = bad
		_, err := Build(s)
		assert.ErrorContains(t, err, "outside the scaled state", "%v", bad)
	}
}
