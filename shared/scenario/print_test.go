package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrintList: one line per built-in scenario, in pack order.
func TestPrintList(t *testing.T) {
	var out strings.Builder
	require.NoError(t, Print(&out, ""))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, len(PackNames()))
	for i, n := range PackNames() {
		assert.True(t, strings.HasPrefix(lines[i], n+" "), lines[i])
		assert.Contains(t, lines[i], " steps ")
	}
}

// TestPrintShow: a name prints the built-in file, which parses back to the same
// scenario; a file is checked and its steps listed; anything else is a one-line error.
func TestPrintShow(t *testing.T) {
	var out strings.Builder
	require.NoError(t, Print(&out, "warming-order"))
	copied := filepath.Join(t.TempDir(), "mine.yaml")
	require.NoError(t, os.WriteFile(copied, []byte(out.String()), 0o644))
	sc, err := ParseFile(copied)
	require.NoError(t, err)
	want, err := Builtin("warming-order")
	require.NoError(t, err)
	assert.Equal(t, Names(want.Steps), Names(sc.Steps))

	out.Reset()
	require.NoError(t, Print(&out, copied))
	assert.Contains(t, out.String(), "1. initial [publish]")

	assert.Error(t, Print(&out, "no-such-scenario"))
}
