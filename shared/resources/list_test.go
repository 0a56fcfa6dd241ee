package resources

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listNames is l's resource names, in order, read through every accessor.
func listNames(t *testing.T, l List) []string {
	t.Helper()
	all := []string{}
	for i, r := range l.All() {
		require.Equal(t, len(all), i, "All yields indexes in order")
		require.Equal(t, r, l.At(i), "All and At agree at %d", i)
		all = append(all, r.Name)
	}
	require.Equal(t, l.Len(), len(all))
	fromSlice := []string{}
	for _, r := range l.Resources() {
		fromSlice = append(fromSlice, r.Name)
	}
	require.Equal(t, all, fromSlice, "Resources is All as a slice")
	return all
}

// Every edit of a List leaves the list it was made from as it was, across chunk
// boundaries, however many lists share its chunks (a model test against plain slices).
func TestListIsPersistent(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 0))
	res := func(name string) Resource { return Resource{Type: EDS, Name: name} }
	type version struct {
		l    List
		want []string
	}
	hist := []version{{want: []string{}}}
	for step := range 400 {
		from := hist[rng.IntN(len(hist))] // a sibling of an earlier edit, often
		want := append([]string{}, from.want...)
		var l List
		switch op := rng.IntN(3); {
		case op == 0 || len(want) == 0:
			var add []Resource
			for j := range rng.IntN(2 * chunkSize) {
				add = append(add, res(fmt.Sprintf("a%d-%d", step, j)))
				want = append(want, add[len(add)-1].Name)
			}
			l = from.l.appended(add...)
		case op == 1:
			var edits []indexed
			for j := range 1 + rng.IntN(3) {
				i := rng.IntN(len(want))
				edits = append(edits, indexed{i, res(fmt.Sprintf("w%d-%d", step, j))})
				want[i] = edits[len(edits)-1].r.Name
			}
			l = from.l.with(edits...)
		default:
			n := rng.IntN(len(want) + 1)
			want = want[:n]
			l = from.l.truncated(n)
		}
		require.Equal(t, want, listNames(t, l), "step %d", step)
		hist = append(hist, version{l, want})
	}
	for i, v := range hist {
		assert.Equal(t, v.want, listNames(t, v.l), "version %d after every later edit", i)
	}
	assert.Equal(t, []string{"x", "y"}, listNames(t, ListOf(res("x"), res("y"))))
	assert.Panics(t, func() { ListOf(res("x")).At(1) })
	assert.Zero(t, List{}.Len())
}

// Rebuilding across chunk boundaries, in both route shapes, from sets that have had
// other sets rebuilt from them: each result equals Build, and no set it was rebuilt
// from (nor their earlier siblings) changes.
func TestRebuildLeavesParentsUnchanged(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 0))
	for walk := range 6 {
		s := State{Version: "1", InventoryPort: 20000, Clusters: chunkSize - 2 + rng.IntN(5)}
		s.OnDemand.VirtualHosts = walk%2 == 1
		type kept struct {
			set   *Set
			state State
			want  map[Type][]string
		}
		first := build(t, s)
		hist := []kept{{first, s, contents(first)}}
		for step := range 30 {
			from := hist[rng.IntN(len(hist))]
			next := mutate(rng, from.state)
			next.OnDemand = s.OnDemand
			if next.Clusters != from.state.Clusters {
				// Around the chunk boundaries at 64 and 128.
				next.Clusters = chunkSize - 3 + (next.Clusters*37)%(chunkSize+8)
			}
			for k, v := range next.RouteTargets {
				if k >= next.Clusters || v >= next.Clusters {
					delete(next.RouteTargets, k)
				}
			}
			for k := range next.EndpointPorts {
				if k >= next.Clusters {
					delete(next.EndpointPorts, k)
				}
			}
			next.Version = fmt.Sprint(step + 2)
			want, err := Build(next)
			if err != nil {
				continue
			}
			got, err := Rebuild(from.set, next)
			require.NoError(t, err, "walk %d step %d", walk, step)
			require.Equal(t, contents(want), contents(got), "walk %d step %d: %+v", walk, step, next)
			hist = append(hist, kept{got, next, contents(got)})
		}
		require.Greater(t, len(hist), 15, "walk %d: enough rebuilds", walk)
		for i, k := range hist {
			assert.Equal(t, k.want, contents(k.set), "walk %d: set %d after every later rebuild", walk, i)
		}
	}
}

// One endpoint change at N = 10,000 allocates O(chunk), not O(N): the list it edits
// shares all but one chunk with its parent. The flat slice it replaced copied 640 kB;
// the bound leaves room for the change's own resource and records.
func TestEndpointChangeAllocatesAChunk(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 10,000 clusters")
	}
	t.Parallel()
	const n = 10_000
	base := State{Version: "1", InventoryPort: 20000, Clusters: n}
	prev := build(t, base)
	states := [2]State{base, base}
	for i, port := range []int{20001, 20002} {
		states[i].EndpointPorts = map[int]int{n / 2: port}
	}
	var rebuildErr error
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		cur := prev
		for i := range b.N {
			next := states[i%2]
			next.Version = fmt.Sprint(i + 2)
			set, err := Rebuild(cur, next)
			if err != nil {
				rebuildErr = err
				return
			}
			cur = set
		}
	})
	require.NoError(t, rebuildErr)
	perOp := res.AllocedBytesPerOp()
	t.Logf("one endpoint change at N = %d: %d B/op, %d allocs/op", n, perOp, res.AllocsPerOp())
	assert.Less(t, perOp, int64(64<<10), "B/op at N = %d: a chunk and the chunk pointers, not N headers", n)
}
