package publish

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish/publishtest"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

func newPublisher(t *testing.T, cfg PublisherConfig) *Publisher {
	t.Helper()
	p, err := NewPublisher(cfg)
	require.NoError(t, err)
	return p
}

func TestPerTypeVersionsMoveOnlyWithContent(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	cache := NewSnapshotCache(nil)
	p := newPublisher(t, PublisherConfig{Cache: cache, NodeID: resources.NodeID,
		Recorder: xdslog.NewRecorder(&buf, protocol.SotW), Strategy: PerType})
	publishtest.Publish(t, p, resources.State{Version: "1", InventoryPort: 18080})
	publishtest.Publish(t, p, resources.State{Version: "2", InventoryPort: 18081})
	assert.Equal(t, map[resources.Type]string{resources.LDS: "1", resources.RDS: "1", resources.CDS: "1", resources.EDS: "2", resources.VHDS: "1", resources.SDS: "1"}, p.Versions())
	publishtest.Publish(t, p, resources.State{Version: "3", InventoryPort: 18081, InvalidRoute: true})
	assert.Equal(t, map[resources.Type]string{resources.LDS: "1", resources.RDS: "3", resources.CDS: "1", resources.EDS: "2", resources.VHDS: "1", resources.SDS: "1"}, p.Versions())
	snap, err := cache.GetSnapshot(resources.NodeID)
	require.NoError(t, err)
	assert.Equal(t, "3", snap.GetVersion(resources.RDS.URL()))
	assert.Equal(t, "2", snap.GetVersion(resources.EDS.URL()))

	ev, _, err := xdslog.Read(&buf)
	require.NoError(t, err)
	require.Len(t, ev, 3)
	assert.Equal(t, []string{"EDS"}, ev[1].Changed)
	assert.Equal(t, []string{"RDS"}, ev[2].Changed)
	assert.Len(t, ev[0].Resources, 4)

	u := newPublisher(t, PublisherConfig{Cache: NewSnapshotCache(nil), NodeID: resources.NodeID, Strategy: Uniform})
	publishtest.Publish(t, u, resources.State{Version: "1", InventoryPort: 18080})
	publishtest.Publish(t, u, resources.State{Version: "2", InventoryPort: 18081})
	assert.Equal(t, resources.UniformVersions("2"), u.Versions())
}

func TestDescribeHashesTheWireBytes(t *testing.T) {
	t.Parallel()
	p := newPublisher(t, PublisherConfig{Cache: NewSnapshotCache(nil), NodeID: resources.NodeID})
	set := publishtest.Publish(t, p, resources.State{Version: "1", InventoryPort: 18080})
	r := set.ByType[resources.CDS].At(0)
	b, err := cachev3.MarshalResource(r.Resource)
	require.NoError(t, err)
	name, hash := p.Describe(&anypb.Any{TypeUrl: resources.CDS.URL(), Value: b})
	assert.Equal(t, r.Name, name)
	assert.Equal(t, r.Hash, hash)

	// Content never published is named by decoding it.
	other, err := resources.Build(resources.State{Version: "9", InventoryPort: 18080, Clusters: 1})
	require.NoError(t, err)
	b, err = cachev3.MarshalResource(other.ByType[resources.CDS].At(0).Resource)
	require.NoError(t, err)
	name, _ = p.Describe(&anypb.Any{TypeUrl: resources.CDS.URL(), Value: b})
	assert.Equal(t, "inventory-0000", name)
	name, _ = p.Describe(&anypb.Any{TypeUrl: "type.googleapis.com/nope", Value: []byte{1}})
	assert.Equal(t, "?undecodable", name)
}

func TestParseVersionStrategy(t *testing.T) {
	t.Parallel()
	_, err := ParseVersionStrategy("sometimes")
	assert.Error(t, err)
	for in, want := range map[string]VersionStrategy{"": Uniform, "uniform": Uniform, "per-type": PerType} {
		s, err := ParseVersionStrategy(in)
		require.NoError(t, err)
		assert.Equal(t, want, s)
	}
}

// setter is a cache that is only what a Publisher needs.
type setter struct {
	snaps map[string]cachev3.ResourceSnapshot
}

func (s *setter) SetSnapshot(_ context.Context, node string, snap cachev3.ResourceSnapshot) error {
	s.snaps[node] = snap
	return nil
}

func TestNewPublisher(t *testing.T) {
	t.Parallel()
	_, err := NewPublisher(PublisherConfig{})
	assert.ErrorContains(t, err, "no cache")
	_, err = NewPublisher(PublisherConfig{Cache: &setter{}, Strategy: "sometimes"})
	assert.ErrorContains(t, err, "unknown version strategy")

	// Defaults, and a cache behind the small interface: SetSnapshot is all it uses.
	c := &setter{snaps: map[string]cachev3.ResourceSnapshot{}}
	p := newPublisher(t, PublisherConfig{Cache: c})
	assert.Equal(t, resources.NodeID, p.NodeID())
	assert.Equal(t, Uniform, p.Strategy())
	assert.Nil(t, p.Current())
	assert.Empty(t, p.Versions())
	set := publishtest.Publish(t, p, resources.State{Version: "1", InventoryPort: 18080})
	assert.Same(t, set, p.Current())
	require.Contains(t, c.snaps, resources.NodeID)
	assert.Equal(t, "1", c.snaps[resources.NodeID].GetVersion(resources.EDS.URL()))
}

func TestParseCache(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Cache{"": SnapshotCache, "snapshot": SnapshotCache, "snapshot-noads": SnapshotCacheNoADS, "linear": LinearCache, "indexed": IndexedCache} {
		c, err := ParseCache(in)
		require.NoError(t, err)
		assert.Equal(t, want, c)
	}
	_, err := ParseCache("lru")
	assert.EqualError(t, err, `unknown cache "lru" (want snapshot, snapshot-noads, linear or indexed)`)
	for _, c := range Caches {
		got, err := ParseCache(string(c))
		require.NoError(t, err)
		assert.Equal(t, c, got)
		assert.Equal(t, c == SnapshotCache || c == SnapshotCacheNoADS, c.IsSnapshot(), "%s", c)
		assert.Equal(t, !c.IsSnapshot(), c.VersionsPerType(), "%s", c)
	}
}

// TestLinearPublisher: each type's cache gets only what changed; an unchanged type's
// version does not move; versions carry the instance prefix, and two publishers never
// share one.
func TestLinearPublisher(t *testing.T) {
	t.Parallel()
	p := NewLinearPublisher(LinearConfig{})
	other := NewLinearPublisher(LinearConfig{})
	assert.NotEqual(t, p.VersionPrefix(), other.VersionPrefix(), "a new instance, a new prefix")
	assert.Equal(t, PerType, p.Strategy())
	assert.Nil(t, p.Current())
	pre := p.VersionPrefix()
	for _, v := range p.Versions() {
		assert.Equal(t, pre+"0", v)
	}
	set1 := publishtest.Publish(t, p, resources.State{Version: "1", InventoryPort: 18080, Clusters: 3})
	assert.Same(t, set1, p.Current())
	for _, typ := range resources.CoreTypes {
		assert.Equal(t, pre+"1", p.Versions()[typ], typ)
	}
	assert.Equal(t, pre+"0", p.Versions()[resources.VHDS], "a type never published keeps its first version")
	// One endpoint changes: only EDS's cache is updated, with that one resource.
	publishtest.Publish(t, p, resources.State{Version: "2", InventoryPort: 18080, Clusters: 3, EndpointPorts: map[int]int{1: 18081}})
	v := p.Versions()
	assert.Equal(t, pre+"2", v[resources.EDS])
	for _, typ := range []resources.Type{resources.CDS, resources.LDS, resources.RDS} {
		assert.Equal(t, pre+"1", v[typ], "%s untouched", typ)
	}
	eds := p.caches[resources.EDS]
	assert.Equal(t, 3, eds.NumResources())
	// The clusters go: CDS and EDS delete them, RDS and LDS are not touched.
	publishtest.Publish(t, p, resources.State{Version: "3", InventoryPort: 18080, Clusters: 3, InventoryRemoved: true})
	v = p.Versions()
	assert.Equal(t, pre+"3", v[resources.EDS])
	assert.Equal(t, pre+"2", v[resources.CDS])
	assert.Equal(t, pre+"1", v[resources.RDS])
	assert.Zero(t, eds.NumResources())
	assert.Zero(t, p.caches[resources.CDS].NumResources())
	// The same content again changes nothing.
	publishtest.Publish(t, p, resources.State{Version: "4", InventoryPort: 18080, Clusters: 3, InventoryRemoved: true})
	assert.Equal(t, v, p.Versions())
	assert.Error(t, p.Publish(context.Background(), nil))
}

// statePublisher makes a publisher of either cache that records into buf.
func statePublisher(t testing.TB, cache Cache, buf *bytes.Buffer) StatePublisher {
	rec := xdslog.NewRecorder(buf, protocol.Delta)
	if cache == LinearCache {
		return NewLinearPublisher(LinearConfig{Recorder: rec})
	}
	p, err := NewPublisher(PublisherConfig{Cache: NewSnapshotCache(nil), Recorder: rec, Strategy: PerType})
	require.NoError(t, err)
	return p
}

// The first publish lists every resource; each later one only what it added, modified
// and deleted; a reader's model rebuilds the published state from them. Both publishers
// write the same events, whether the set was rebuilt from the current one or built whole.
func TestPublishEventsAreIncremental(t *testing.T) {
	t.Parallel()
	for _, cache := range []Cache{SnapshotCache, LinearCache} {
		for _, rebuild := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/rebuild=%v", cache, rebuild), func(t *testing.T) {
				var buf bytes.Buffer
				p := statePublisher(t, cache, &buf)
				states := []resources.State{
					{Version: "1", InventoryPort: 18080, Clusters: 3},
					{Version: "2", InventoryPort: 18080, Clusters: 3, EndpointPorts: map[int]int{1: 18081}},
					{Version: "3", InventoryPort: 18080, Clusters: 2, EndpointPorts: map[int]int{1: 18081}},
					{Version: "4", InventoryPort: 18080, Clusters: 2, EndpointPorts: map[int]int{1: 18081}},
				}
				for _, s := range states {
					var (
						set *resources.Set
						err error
					)
					if rebuild {
						set, err = resources.Rebuild(p.Current(), s)
					} else {
						set, err = resources.Build(s)
					}
					require.NoError(t, err)
					require.NoError(t, p.Publish(context.Background(), set))
				}
				ev, _, err := xdslog.Read(&buf)
				require.NoError(t, err)
				require.Len(t, ev, 4)
				assert.False(t, ev[0].Incremental)
				assert.Len(t, ev[0].Resources, 8, "the first publish in full: 3+3 clusters and endpoints, a listener, a route")
				assert.True(t, ev[1].Incremental)
				assert.Equal(t, []string{"EDS/inventory-0001"}, typeNames(ev[1].Resources))
				assert.Empty(t, ev[1].Deleted)
				assert.Equal(t, []string{"RDS/quote-route"}, typeNames(ev[2].Resources))
				assert.Equal(t, []string{"CDS/inventory-0002", "EDS/inventory-0002"}, typeNames(ev[2].Deleted))
				assert.Len(t, ev[2].Deleted[0].Hash, 64, "a deletion names the content it removes")
				assert.Equal(t, []string{"CDS", "EDS", "RDS"}, ev[2].Changed)
				assert.True(t, ev[3].Incremental)
				assert.Empty(t, ev[3].Resources, "nothing changed")
				assert.Empty(t, ev[3].Changed)

				m := xdslog.NewModel(nil)
				for _, e := range ev {
					m.Observe(e)
				}
				for name, want := range map[string]bool{"inventory-0000": true, "inventory-0001": true, "inventory-0002": false} {
					has, ok := m.Published("CDS", name)
					assert.True(t, ok)
					assert.Equal(t, want, has, name)
				}
			})
		}
	}
}

func typeNames(rs xdslog.Resources) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Type+"/"+r.Name)
	}
	return out
}

// The name table holds the published state and what the last publish replaced, no more:
// a long run of publishes does not grow it.
func TestNameTableStaysBounded(t *testing.T) {
	t.Parallel()
	for _, cache := range []Cache{SnapshotCache, LinearCache} {
		var buf bytes.Buffer
		p := statePublisher(t, cache, &buf)
		var set *resources.Set
		for i := range 200 {
			var err error
			set, err = resources.Rebuild(p.Current(), resources.State{Version: fmt.Sprint(i + 1), InventoryPort: 18080, Clusters: 5, EndpointPorts: map[int]int{i % 5: 18081 + i%7}})
			require.NoError(t, err)
			require.NoError(t, p.Publish(context.Background(), set))
		}
		var names *nameTable
		switch p := p.(type) {
		case *Publisher:
			names = &p.names
		case *LinearPublisher:
			names = &p.names
		}
		// Each publish moves two endpoints: the new override and the one it drops.
		assert.LessOrEqual(t, len(names.byHash), 12+2, "%s: 12 resources published and the two the last publish replaced", cache)
		// What was sent of the state before the last publish is still named.
		for _, r := range set.ByType[resources.EDS].All() {
			any, err := anypb.New(r.Resource)
			require.NoError(t, err)
			name, hash := p.Describe(any)
			assert.Equal(t, r.Name, name)
			assert.Equal(t, r.Hash, hash)
		}
	}
}

// BenchmarkPublishEndpoint is one endpoint change at N = 10,000 made and published the way
// the control plane does (Rebuild, then Publish, recorded), per cache, with no client
// connected: what the workbench itself costs per change.
func BenchmarkPublishEndpoint(b *testing.B) {
	for _, cache := range []Cache{SnapshotCache, LinearCache} {
		b.Run(string(cache), func(b *testing.B) {
			var buf bytes.Buffer
			p := statePublisher(b, cache, &buf)
			state := func(i int) resources.State {
				return resources.State{Version: fmt.Sprint(i), InventoryPort: 18080, Clusters: 10_000, EndpointPorts: map[int]int{0: 18081 + i%2}}
			}
			set, err := resources.Build(state(0))
			require.NoError(b, err)
			require.NoError(b, p.Publish(context.Background(), set))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				buf.Reset()
				set, err := resources.Rebuild(p.Current(), state(i))
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Publish(context.Background(), set); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
