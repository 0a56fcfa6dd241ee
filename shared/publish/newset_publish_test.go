package publish

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// TestPublishExplicitSet: both publishers publish a set made by resources.NewSet (what a
// revert publishes: the current state with one type's earlier content), recording only
// what it changes, and the next state rebuilt from it.
func TestPublishExplicitSet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, cache := range []Cache{SnapshotCache, LinearCache, IndexedCache} {
		t.Run(string(cache), func(t *testing.T) {
			var buf bytes.Buffer
			p := statePublisher(t, cache, &buf)
			v1, err := resources.Build(resources.State{Version: "1", InventoryPort: 18080})
			require.NoError(t, err)
			require.NoError(t, p.Publish(ctx, v1))
			v2, err := resources.Rebuild(v1, resources.State{Version: "2", InventoryPort: 18080, InvalidRoute: true})
			require.NoError(t, err)
			require.NoError(t, p.Publish(ctx, v2))

			var rs []resources.Resource
			for _, typ := range []resources.Type{resources.LDS, resources.CDS, resources.EDS} {
				rs = append(rs, v2.ByType[typ].Resources()...)
			}
			reverted, err := resources.NewSet("2-reverted", append(rs, v1.ByType[resources.RDS].Resources()...), nil)
			require.NoError(t, err)
			require.NoError(t, p.Publish(ctx, reverted))
			assert.Equal(t, "2-reverted", p.Current().Version)
			assert.Equal(t, v1.Hashes(resources.RDS), p.Current().Hashes(resources.RDS))

			v3, err := resources.Rebuild(p.Current(), resources.State{Version: "3", InventoryPort: 18081})
			require.NoError(t, err)
			require.NoError(t, p.Publish(ctx, v3))

			ev, st, err := xdslog.Read(&buf)
			require.NoError(t, err)
			require.Zero(t, st.Skipped)
			require.Len(t, ev, 4)
			assert.Equal(t, []string{"RDS"}, ev[1].Changed)
			assert.Equal(t, []string{"RDS"}, ev[2].Changed, "the revert changes the route back, nothing else")
			assert.Equal(t, "2-reverted", ev[2].Version)
			assert.Equal(t, []string{"EDS"}, ev[3].Changed)
		})
	}
}
