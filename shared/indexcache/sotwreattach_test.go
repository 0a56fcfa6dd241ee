package indexcache

import (
	"fmt"
	"testing"

	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	rsrc "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	stream "github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"
	"github.com/stretchr/testify/require"
)

// sotwClient drives the cache as the library's SotW ADS server does for one stream's
// EDS: one subscription value for the stream, SetResourceSubscription before every
// watch after the first, and the returned-versions map taken from a response only when
// the server sends it.
type sotwClient struct {
	c       *Cache
	sub     stream.Subscription
	ch      chan cachev3.Response
	cancel  func()
	version string
}

func newSotwClient(t *testing.T, c *Cache, names []string) *sotwClient {
	s := &sotwClient{c: c, sub: stream.NewSotwSubscription(names, false), ch: make(chan cachev3.Response, 1)}
	s.watch(t, names)
	return s
}

func (s *sotwClient) watch(t *testing.T, names []string) {
	if s.cancel != nil {
		s.cancel()
		s.sub.SetResourceSubscription(names)
	}
	var err error
	s.cancel, err = s.c.CreateWatch(&cachev3.Request{TypeUrl: rsrc.EndpointType, VersionInfo: s.version, ResourceNames: names}, s.sub, s.ch)
	require.NoError(t, err)
}

// take is the server sending the pending response: its resources by name and version.
func (s *sotwClient) take(t *testing.T) map[string]string {
	select {
	case r := <-s.ch:
		s.sub.SetReturnedResources(r.GetReturnedResources())
		s.version = r.GetResponseVersion()
		resp, err := r.GetDiscoveryResponse()
		require.NoError(t, err)
		got := map[string]string{}
		for _, a := range resp.GetResources() {
			cla := &endpoint.ClusterLoadAssignment{}
			require.NoError(t, a.UnmarshalTo(cla))
			got[cla.GetClusterName()] = fmt.Sprint(len(cla.GetEndpoints()))
		}
		return got
	default:
		return nil
	}
}

// drop is the server dropping the pending response (its type's next request came first).
func (s *sotwClient) drop(t *testing.T) {
	select {
	case <-s.ch:
	default:
		t.Fatal("no response to drop")
	}
}

func claWith(name string, localities int) types.Resource {
	cla := &endpoint.ClusterLoadAssignment{ClusterName: name}
	for range localities {
		cla.Endpoints = append(cla.Endpoints, &endpoint.LocalityLbEndpoints{})
	}
	return cla
}

// TestSotWReattach: a SotW subscription is found again by its stream's returned map, so
// an ACK re-files nothing; what it must still see, it sees: a change made while no watch
// was open, a response the server dropped, and names the request adds or drops.
func TestSotWReattach(t *testing.T) {
	t.Parallel()
	c := New("p.", rsrc.EndpointType)
	set := func(name string, n int) {
		require.NoError(t, c.Update(rsrc.EndpointType, map[string]types.Resource{name: claWith(name, n)}, nil))
	}
	set("a", 1)
	set("b", 1)
	cl := newSotwClient(t, c, []string{"a", "b"})
	require.Equal(t, map[string]string{"a": "1", "b": "1"}, cl.take(t))
	cl.watch(t, []string{"a", "b"}) // the ACK
	require.Nil(t, cl.take(t), "an ACK of what the client has is not answered")
	regs := len(c.types[rsrc.EndpointType].sotwRegs)

	set("a", 2) // answered on the open watch
	require.Equal(t, map[string]string{"a": "2"}, cl.take(t))
	set("b", 2) // no watch open: marked for the next one
	cl.watch(t, []string{"a", "b"})
	require.Equal(t, map[string]string{"b": "2"}, cl.take(t), "a change made between watches")

	cl.watch(t, []string{"a", "b"})
	set("a", 3)
	cl.drop(t)
	cl.watch(t, []string{"a", "b"})
	require.Equal(t, map[string]string{"a": "3"}, cl.take(t), "a dropped response is sent again")

	set("c", 1)
	cl.watch(t, []string{"a", "b", "c"})
	require.Equal(t, map[string]string{"c": "1"}, cl.take(t), "a name the request adds")
	cl.watch(t, []string{"a", "c"})
	require.Nil(t, cl.take(t))
	set("b", 3)
	require.Nil(t, cl.take(t), "a name the request dropped is no longer watched")
	require.NotContains(t, c.types[rsrc.EndpointType].byName["b"], c.types[rsrc.EndpointType].sotwRegs[mapKey(cl.sub.ReturnedResources())])
	require.Equal(t, regs, len(c.types[rsrc.EndpointType].sotwRegs), "one registration for the stream, found again each time")
}
