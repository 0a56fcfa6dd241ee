package publishtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/log"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/resources"
)

// recorded is a Publisher that keeps what it was given.
type recorded struct{ sets []*resources.Set }

func (r *recorded) Publish(_ context.Context, set *resources.Set) error {
	r.sets = append(r.sets, set)
	return nil
}

func TestPublishBuildsAndPublishes(t *testing.T) {
	t.Parallel()
	var p recorded
	set := Publish(t, &p, resources.State{Version: "7", InventoryPort: 18080, Clusters: 2})
	require.Len(t, p.sets, 1)
	assert.Same(t, set, p.sets[0])
	assert.Equal(t, "7", set.Version)
	assert.Equal(t, 2, set.ByType[resources.EDS].Len())
}

// The watcher gets every name first, then, after each update, what changed, with
// its watch opened again each time, in either protocol and with or without the SotW
// resubscription.
func TestEDSWatcherSeesEachChange(t *testing.T) {
	t.Parallel()
	all, names, moved := Assignments(t, 3)
	require.Len(t, names, 3)
	assert.NotEqual(t, all[names[0]], moved[0])
	for _, w := range []Watch{{Delta: true}, {}, {Resubscribe: true}} {
		w.Names = names
		t.Run(fmt.Sprintf("delta=%v/resubscribe=%v", w.Delta, w.Resubscribe), func(t *testing.T) {
			t.Parallel()
			c := cachev3.NewLinearCache(resources.EDS.URL(), cachev3.WithLogger(log.LoggerFuncs{}))
			c.SetResources(all)
			ew := NewEDSWatcher(t, c, w)
			for i := range 3 {
				require.NoError(t, c.UpdateResources(map[string]types.Resource{names[0]: moved[i%2]}, nil))
				// The LinearCache answers an EDS change with the changed assignment only, in
				// SotW too (EDS is not a full-state type).
				assert.Equal(t, 1, ew.Next(t), "change %d", i)
			}
		})
	}
}
