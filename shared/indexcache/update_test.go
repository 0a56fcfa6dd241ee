package indexcache

import (
	"testing"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	rsrc "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	stream "github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUpdateRefusesBadPublishes: a publish the cache cannot serve is refused naming the
// resource, and nothing served changes: the next good publish is the type's first
// version, and a client sees only it.
func TestUpdateRefusesBadPublishes(t *testing.T) {
	t.Parallel()
	c := New("p.", rsrc.ClusterType, rsrc.EndpointType)
	cla := func(n string) *endpoint.ClusterLoadAssignment { return &endpoint.ClusterLoadAssignment{ClusterName: n} }
	for name, tc := range map[string]struct {
		u    TypeUpdate
		want string
	}{
		"unknown type":    {TypeUpdate{TypeURL: rsrc.ListenerType}, "update: type " + rsrc.ListenerType + " is not served by this cache"},
		"nil":             {TypeUpdate{TypeURL: rsrc.EndpointType, Set: map[string]types.Resource{"a": (*endpoint.ClusterLoadAssignment)(nil)}}, `resource "a" is nil`},
		"misnamed":        {TypeUpdate{TypeURL: rsrc.EndpointType, Set: map[string]types.Resource{"a": cla("b")}}, `resource "a" is named "b"`},
		"set and deleted": {TypeUpdate{TypeURL: rsrc.EndpointType, Set: map[string]types.Resource{"a": cla("a")}, Delete: []string{"a"}}, `resource "a" both set and deleted`},
		"another type":    {TypeUpdate{TypeURL: rsrc.EndpointType, Set: map[string]types.Resource{"a": &cluster.Cluster{Name: "a"}}}, `resource "a" is a envoy.config.cluster.v3.Cluster, not a envoy.config.endpoint.v3.ClusterLoadAssignment`},
	} {
		// A good type's update beside the bad one is refused with it.
		good := TypeUpdate{TypeURL: rsrc.ClusterType, Set: map[string]types.Resource{"x": &cluster.Cluster{Name: "x"}}}
		called := false
		err := c.UpdateAll([]TypeUpdate{good, tc.u}, func() { called = true })
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tc.want, name)
		assert.False(t, called, "%s: not recorded as published", name)
	}

	require.NoError(t, c.Update(rsrc.EndpointType, map[string]types.Resource{"a": cla("a")}, nil))
	ch := make(chan cachev3.DeltaResponse, 1)
	sub := stream.NewDeltaSubscription(nil, nil, nil, true)
	_, err := c.CreateDeltaWatch(&discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: "n"}, TypeUrl: rsrc.EndpointType}, &sub, ch)
	require.NoError(t, err)
	resp := <-ch
	out, err := resp.GetDeltaDiscoveryResponse()
	require.NoError(t, err)
	assert.Equal(t, "p.1", out.GetSystemVersionInfo(), "the refused publishes moved no version")
	require.Len(t, out.GetResources(), 1)
	assert.Equal(t, "a", out.GetResources()[0].GetName())

	cds := make(chan cachev3.DeltaResponse, 1)
	csub := stream.NewDeltaSubscription(nil, nil, nil, true)
	_, err = c.CreateDeltaWatch(&discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: "n"}, TypeUrl: rsrc.ClusterType}, &csub, cds)
	require.NoError(t, err)
	out, err = (<-cds).GetDeltaDiscoveryResponse()
	require.NoError(t, err)
	assert.Empty(t, out.GetResources(), "the good update refused with a bad one is not served")
}
