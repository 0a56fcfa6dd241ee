package runner

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/scenario"
)

// TestRunPackNotApplicable: lab run --scenario all --mode sotw skips the on-demand
// scenarios with their reason (envoy.result NOT_APPLICABLE, no run) and does not fail.
func TestRunPackNotApplicable(t *testing.T) {
	pack, err := scenario.Pack()
	require.NoError(t, err)
	base := t.TempDir()
	ran := map[string]bool{}
	fake := func(_ context.Context, o Options, _ io.Writer) error {
		if err := o.Scenario.CheckMode(o.Mode); err != nil {
			return err
		}
		ran[o.Scenario.Name] = true
		return nil
	}
	var progress strings.Builder
	require.NoError(t, RunPack(context.Background(), Options{Mode: "sotw", Out: base}, pack, fake, &progress))
	for _, sc := range pack {
		if !sc.OnDemand.Any() {
			assert.True(t, ran[sc.Name], sc.Name)
			continue
		}
		assert.False(t, ran[sc.Name], sc.Name)
		b, err := os.ReadFile(filepath.Join(base, sc.Name, "envoy.result"))
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(b), "NOT_APPLICABLE: scenario "+sc.Name+" does not apply to mode sotw: on-demand xDS"), string(b))
		assert.NoFileExists(t, filepath.Join(base, sc.Name, "xds.log"))
	}
	assert.Contains(t, progress.String(), "not applicable here (envoy.result says why): on-demand-vhost, on-demand-cluster, on-demand-restart")
}
