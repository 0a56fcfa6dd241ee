package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOutDir: the default is under experiments/evidence/sweep; a directory that holds
// anything is refused.
func TestOutDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := OutDir(dir)
	require.NoError(t, err)
	assert.Equal(t, dir, out)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sweep.json"), nil, 0o600))
	_, err = OutDir(dir)
	assert.ErrorContains(t, err, "already holds a file (sweep.json)")
	if def, err := OutDir(""); err == nil {
		assert.True(t, strings.HasPrefix(def, filepath.Join("experiments", "evidence", "sweep")+string(filepath.Separator)), def)
	}
}
