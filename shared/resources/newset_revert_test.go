package resources

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNewSetFromExplicitResources: NewSet keeps the resources given (sorted per type by
// name), validates all but the invalid ones, and its snapshot skips Consistent.
func TestNewSetFromExplicitResources(t *testing.T) {
	t.Parallel()
	v1 := build(t, State{Version: "1", InventoryPort: 18080, Clusters: 3})
	bad := build(t, State{Version: "2", InventoryPort: 18080, InvalidRoute: true})

	var rs []Resource
	for _, typ := range Types {
		list := v1.ByType[typ]
		for i := list.Len() - 1; i >= 0; i-- { // reversed: NewSet sorts
			rs = append(rs, list.At(i))
		}
	}
	set, err := NewSet("1-again", rs, nil)
	require.NoError(t, err)
	assert.Equal(t, "1-again", set.Version)
	for _, typ := range Types {
		assert.Equal(t, v1.Hashes(typ), set.Hashes(typ), "%s", typ)
		for i, r := range set.ByType[typ].All() {
			assert.Equal(t, v1.ByType[typ].At(i).Name, r.Name, "%s sorted by name", typ)
		}
	}
	assert.True(t, Diff(v1, set).Empty(), "same content")

	// Lenient: a route pointing at clusters the set lacks still makes a snapshot.
	partial, err := NewSet("partial", []Resource{v1.ByType[LDS].At(0), v1.ByType[RDS].At(0)}, nil)
	require.NoError(t, err)
	_, err = partial.Snapshot(UniformVersions("partial"))
	require.NoError(t, err)

	// The invalid route passes only when named invalid.
	_, err = NewSet("3", bad.ByType[RDS].Resources(), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `version 3: RDS "quote-route"`)
	invalid, err := NewSet("3", bad.ByType[RDS].Resources(), []string{"RDS/" + RouteName})
	require.NoError(t, err)
	assert.Equal(t, []string{RouteName}, invalid.Invalid)

	// A hash left empty is computed.
	r := v1.ByType[CDS].At(0)
	want := r.Hash
	r.Hash = ""
	hashed, err := NewSet("4", []Resource{r}, nil)
	require.NoError(t, err)
	assert.Equal(t, want, hashed.ByType[CDS].At(0).Hash)

	for name, c := range map[string]struct {
		version string
		rs      []Resource
		want    string
	}{
		"empty version": {"", nil, "empty version"},
		"unknown type":  {"5", []Resource{{Type: "RTDS", Name: "x", Resource: r.Resource}}, `unknown type "RTDS"`},
		"no content":    {"5", []Resource{{Type: CDS, Name: "x"}}, "without a name or content"},
		"twice":         {"5", []Resource{v1.ByType[CDS].At(0), v1.ByType[CDS].At(0)}, "given twice"},
	} {
		_, err := NewSet(c.version, c.rs, nil)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), c.want, name)
	}
}

// TestRebuildFromNewSetBuildsInFull: a set made by NewSet has no state, so Rebuild from it
// builds the next state whole (and still records the change).
func TestRebuildFromNewSetBuildsInFull(t *testing.T) {
	t.Parallel()
	v1 := build(t, State{Version: "1", InventoryPort: 18080})
	bad := build(t, State{Version: "2", InventoryPort: 18080, InvalidRoute: true})
	var rs []Resource
	for _, typ := range []Type{LDS, CDS, EDS} {
		rs = append(rs, bad.ByType[typ].Resources()...)
	}
	reverted, err := NewSet("2-reverted", append(rs, v1.ByType[RDS].Resources()...), nil)
	require.NoError(t, err)

	next, err := Rebuild(reverted, State{Version: "3", InventoryPort: 18081})
	require.NoError(t, err)
	whole := build(t, State{Version: "3", InventoryPort: 18081})
	for _, typ := range Types {
		assert.Equal(t, whole.Hashes(typ), next.Hashes(typ), "%s", typ)
	}
	assert.True(t, next.RebuiltFrom(reverted))
	assert.Equal(t, []Type{EDS}, Diff(reverted, next).Types())
	_, err = next.Snapshot(UniformVersions("3"))
	require.NoError(t, err, "a built set is checked for consistency again")
}
