package compare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSessionsAreNeverMerged: a log that two `lab serve` sessions appended to is refused
// unless one session is chosen, and a chosen session is compared alone.
func TestSessionsAreNeverMerged(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(sotwRun, "xds.log"))
	require.NoError(t, err)
	session := func(id string) string {
		return `{"ts":"2026-12-01T10:00:00Z","event":"session","mode":"sotw","step":"","server":1,"session":"` + id + `","pid":42}` + "\n"
	}
	path := filepath.Join(t.TempDir(), "xds.log")
	// The second session is only its first step: the two differ, so a merge would show.
	first := strings.SplitAfter(string(good), "\n")
	var initial strings.Builder
	for _, l := range first {
		if strings.Contains(l, `"step":"initial"`) {
			initial.WriteString(l)
		}
	}
	require.NoError(t, os.WriteFile(path, []byte(session("one")+string(good)+session("two")+initial.String()), 0o644))

	_, err = Load("A", path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "xds.log holds 2 sessions (each lab serve appends one); choose one with --session-a N (1-2)")

	whole, err := Load("A", sotwRun)
	require.NoError(t, err)
	one, err := LoadSession("A", path, 1)
	require.NoError(t, err)
	assert.Equal(t, whole.Summary.Total, one.Summary.Total, "session 1 is the whole first run")
	two, err := LoadSession("B", path, 2)
	require.NoError(t, err)
	require.NotNil(t, two.Summary.Step("initial"))
	assert.Nil(t, two.Summary.Step("port-change"), "session 2 holds only its own steps")
	assert.Equal(t, whole.Summary.Step("initial").Total, two.Summary.Step("initial").Total)

	_, err = LoadSession("B", path, 3)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--session-b 3: xds.log holds 2 session(s) (want 1-2)")
}
