package xdslog

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// StepNames lists the step events' names once each, in order, from a file or a run
// directory; other events naming a step, and broken lines, are passed over.
func TestStepNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := `{"ts":"2026-12-01T09:18:28Z","event":"step","mode":"delta","step":"initial","server":1}
{"ts":"2026-12-01T09:18:29Z","event":"send","mode":"delta","step":"not-a-marker","server":1}
{"ts":"2026-12-01T09:18:30Z","event":"step","mode":"delta","step":"port-change","server":1}
{"event":"step","step":
{"ts":"2026-12-01T09:18:31Z","event":"step","mode":"delta","step":"initial","server":2}
{"ts":"2026-12-01T09:18:32Z","event":"step","mode":"delta","step":"","server":1}
{"ts":"2026-12-01T09:18:33Z","event":"step","mode":"delta","step":"restore","server":1}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "xds.log"), []byte(log), 0o644))
	for _, path := range []string{dir, filepath.Join(dir, "xds.log")} {
		got, err := StepNames(path)
		require.NoError(t, err)
		assert.Equal(t, []string{"initial", "port-change", "restore"}, got)
	}
	_, err := StepNames(filepath.Join(dir, "missing"))
	assert.ErrorContains(t, err, "open run")
}
