package envoy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/bootstrap"
)

// TestWriteBootstrap: the file holds exactly what bootstrap.Render makes, readable by
// all, with no temporary file left beside it.
func TestWriteBootstrap(t *testing.T) {
	dir := t.TempDir()
	b := Bootstrap{Mode: "delta", Params: bootstrap.Params{XDSAddr: "127.0.0.1:18000", AdminPort: 19000}, Path: filepath.Join(dir, "bootstrap.yaml")}
	require.NoError(t, WriteBootstrap(b))
	want, err := bootstrap.Render(b.Mode, b.Params)
	require.NoError(t, err)
	got, err := os.ReadFile(b.Path)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
	fi, err := os.Stat(b.Path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left")
}

// TestLauncherRefusesBeforeStarting: a bootstrap that cannot be rendered or written is
// an error from NewLauncher (and Launch), before any Envoy runs.
func TestLauncherRefusesBeforeStarting(t *testing.T) {
	_, err := NewLauncher(Bootstrap{Mode: "grpc", Path: filepath.Join(t.TempDir(), "b.yaml")}, Options{})
	assert.ErrorContains(t, err, "render grpc bootstrap")
	_, err = Launch(t.Context(), Bootstrap{Mode: "sotw", Params: bootstrap.Params{XDSAddr: "127.0.0.1:18000"}, Path: filepath.Join(t.TempDir(), "missing", "b.yaml")}, Options{})
	assert.ErrorContains(t, err, "write bootstrap")
}
