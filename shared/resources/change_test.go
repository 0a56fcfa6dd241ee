package resources

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// contents is a set's resources as type -> ordered "name=hash", and its invalid names.
func contents(s *Set) map[Type][]string {
	out := map[Type][]string{}
	for _, t := range Types {
		for _, r := range s.ByType[t].All() {
			out[t] = append(out[t], r.Name+"="+r.Hash)
		}
	}
	out["invalid"] = s.Invalid
	return out
}

// fullDiff is Diff without the recorded change: the O(N) comparison by content hash.
func fullDiff(prev, next *Set) Change {
	stripped := *next
	stripped.change = nil
	return Diff(prev, &stripped)
}

// Rebuild must give exactly what Build gives, and record exactly the change a full
// comparison finds, over random walks through every field a state has.
func TestRebuildEqualsBuild(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 0))
	for walk := range 40 {
		s := State{Version: "1", InventoryPort: 20000, Clusters: rng.IntN(6)}
		prev := build(t, s)
		for step := range 25 {
			next := mutate(rng, s)
			next.Version = fmt.Sprint(step + 2)
			want, err := Build(next)
			got, rerr := Rebuild(prev, next)
			if err != nil {
				require.Error(t, rerr, "walk %d step %d: Build refused %+v (%v), Rebuild did not", walk, step, next, err)
				continue
			}
			require.NoError(t, rerr, "walk %d step %d: %+v", walk, step, next)
			require.Equal(t, contents(want), contents(got), "walk %d step %d: %+v -> %+v", walk, step, s, next)
			assert.Equal(t, editNames(fullDiff(prev, got)), editNames(Diff(prev, got)), "walk %d step %d: recorded change", walk, step)
			prev, s = got, next
		}
	}
}

func editNames(c Change) []string {
	var out []string
	for _, e := range c.Edits {
		op := "~"
		switch {
		case e.Old == nil:
			op = "+"
		case e.New == nil:
			op = "-"
		}
		if (e.Old != nil && (e.Old.Name != e.Name || e.Old.Type != e.Type)) || (e.New != nil && (e.New.Name != e.Name || e.New.Type != e.Type)) {
			op = "MISNAMED" // an edit whose resources are not the one it names
		}
		out = append(out, fmt.Sprintf("%s%s/%s", op, e.Type, e.Name))
	}
	return out
}

// mutate changes one or two random fields of s (maps are copied, never shared).
func mutate(rng *rand.Rand, s State) State {
	out := s
	out.EndpointPorts, out.RouteTargets = map[int]int{}, map[int]int{}
	for k, v := range s.EndpointPorts {
		out.EndpointPorts[k] = v
	}
	for k, v := range s.RouteTargets {
		out.RouteTargets[k] = v
	}
	for range 1 + rng.IntN(2) {
		switch rng.IntN(11) {
		case 0:
			out.Clusters = max(0, out.Clusters+rng.IntN(5)-2)
		case 1:
			if out.Clusters > 0 {
				out.EndpointPorts[rng.IntN(out.Clusters)] = 20001 + rng.IntN(3)
			}
		case 2:
			for k := range out.EndpointPorts {
				delete(out.EndpointPorts, k)
				break
			}
		case 3:
			if out.Clusters > 0 {
				out.RouteTargets[rng.IntN(out.Clusters)] = rng.IntN(out.Clusters)
			}
		case 4:
			out.ServerName = []string{"", "lab-a", "lab-b"}[rng.IntN(3)]
		case 5:
			out.InvalidRoute = !out.InvalidRoute
		case 6:
			out.InventoryRemoved = rng.IntN(4) == 0
		case 7:
			out.InventoryPort = 20000 + rng.IntN(2)
		case 8:
			out.ListenerPort = 19000 + rng.IntN(2)
		case 9:
			out.Proxyless = !out.Proxyless
		case 10:
			out.UnlistedEmpty = !out.UnlistedEmpty
		}
	}
	// Keep the maps inside the state (Build refuses the rest; the walk then skips).
	for k := range out.EndpointPorts {
		if k >= out.Clusters {
			delete(out.EndpointPorts, k)
		}
	}
	for k, v := range out.RouteTargets {
		if k >= out.Clusters || v >= out.Clusters {
			delete(out.RouteTargets, k)
		}
	}
	return out
}

// The workloads of lab bench, each as the change Rebuild records at N = 1,000.
func TestRebuildRecordsOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	base := State{Version: "1", InventoryPort: 20000, Clusters: 1000}
	prev := build(t, base)
	for _, tc := range []struct {
		name  string
		edit  func(*State)
		edits []string
	}{
		{"endpoint", func(s *State) { s.EndpointPorts = map[int]int{7: 20001} }, []string{"~EDS/inventory-0007"}},
		{"cluster-add", func(s *State) { s.Clusters = 1001 }, []string{"+CDS/inventory-1000", "+EDS/inventory-1000", "~RDS/quote-route"}},
		{"cluster-remove", func(s *State) { s.Clusters = 999 }, []string{"-CDS/inventory-0999", "-EDS/inventory-0999", "~RDS/quote-route"}},
		{"route", func(s *State) { s.RouteTargets = map[int]int{0: 1} }, []string{"~RDS/quote-route"}},
		{"listener", func(s *State) { s.ServerName = "lab-b" }, []string{"~LDS/quote-listener"}},
		{"no change", func(s *State) {}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := base
			next.Version = "2"
			tc.edit(&next)
			got, err := Rebuild(prev, next)
			require.NoError(t, err)
			assert.Equal(t, tc.edits, editNames(Diff(prev, got)))
			assert.Equal(t, Change{}.Types(), Diff(got, got).Types(), "a set does not differ from itself")
			// Untouched types share prev's resources: nothing was rebuilt for them.
			for _, typ := range Types {
				if prev.ByType[typ].Len() > 0 && !contains(Diff(prev, got).Types(), typ) {
					assert.Same(t, prev.ByType[typ].ref(0), got.ByType[typ].ref(0), "%s is shared", typ)
				}
			}
			// prev is untouched by the rebuild.
			assert.Equal(t, contents(build(t, base)), contents(prev))
		})
	}
}

func contains(ts []Type, t Type) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// A rebuilt set answers Diff with its recorded change only against its own parent: any
// other set gets the full comparison.
func TestDiffAgainstAnotherSetCompares(t *testing.T) {
	t.Parallel()
	a := build(t, State{Version: "1", InventoryPort: 20000, Clusters: 3})
	b, err := Rebuild(a, State{Version: "2", InventoryPort: 20000, Clusters: 3, EndpointPorts: map[int]int{1: 20001}})
	require.NoError(t, err)
	c, err := Rebuild(b, State{Version: "3", InventoryPort: 20000, Clusters: 3, EndpointPorts: map[int]int{1: 20001, 2: 20001}})
	require.NoError(t, err)
	assert.Equal(t, []string{"~EDS/inventory-0001", "~EDS/inventory-0002"}, editNames(Diff(a, c)))
	assert.Equal(t, []string{"~EDS/inventory-0002"}, editNames(Diff(b, c)))
	assert.Equal(t, []string{"~EDS/inventory-0001", "~EDS/inventory-0002"}, editNames(Diff(c, a)), "backwards too")
}

// Bad states are refused by Rebuild as by Build, with the same one-line errors.
func TestRebuildRefusesWhatBuildRefuses(t *testing.T) {
	t.Parallel()
	prev := build(t, State{Version: "1", InventoryPort: 20000, Clusters: 3})
	for _, s := range []State{
		{Version: "", InventoryPort: 20000, Clusters: 3},
		{Version: "2", InventoryPort: 20000, Clusters: 3, EndpointPorts: map[int]int{3: 20001}},
		{Version: "2", InventoryPort: 20000, Clusters: 3, RouteTargets: map[int]int{0: 9}},
		{Version: "2", InventoryPort: 20000, Clusters: 3, EndpointPorts: map[int]int{0: 70000}},
	} {
		_, berr := Build(s)
		_, rerr := Rebuild(prev, s)
		require.Error(t, berr)
		assert.EqualError(t, rerr, berr.Error())
	}
}

// The caller's maps are copied: changing them after a build changes nothing built.
func TestRebuildCopiesTheStatesMaps(t *testing.T) {
	t.Parallel()
	ports := map[int]int{0: 20001}
	a := build(t, State{Version: "1", InventoryPort: 20000, Clusters: 2, EndpointPorts: ports})
	ports[0] = 20002
	b, err := Rebuild(a, State{Version: "2", InventoryPort: 20000, Clusters: 2, EndpointPorts: ports})
	require.NoError(t, err)
	assert.Equal(t, []string{"~EDS/inventory-0000"}, editNames(Diff(a, b)))
}

func benchState(v string, port int) State {
	return State{Version: v, InventoryPort: 20000, Clusters: 10_000, EndpointPorts: map[int]int{0: port}}
}

// BenchmarkRebuildEndpoint is one endpoint change at N = 10,000 built incrementally;
// BenchmarkBuildEndpoint is the same change built whole, as every publish did before.
func BenchmarkRebuildEndpoint(b *testing.B) {
	prev, err := Build(benchState("0", 20001))
	require.NoError(b, err)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		next, err := Rebuild(prev, benchState(fmt.Sprint(i), 20001+i%2))
		if err != nil {
			b.Fatal(err)
		}
		prev = next
	}
}

func BenchmarkBuildEndpoint(b *testing.B) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := Build(benchState(fmt.Sprint(i), 20001+i%2)); err != nil {
			b.Fatal(err)
		}
	}
}
