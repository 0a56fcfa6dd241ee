package option

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckOut: a new or empty directory passes; a file, or a directory that holds
// something, is refused on OptionOut with the directory as the value.
func TestCheckOut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	assert.NoError(t, CheckOutEmpty(""), "unset")
	assert.NoError(t, CheckOutEmpty(filepath.Join(dir, "new")), "does not exist yet")
	assert.NoError(t, CheckOutEmpty(dir), "empty")

	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	err := CheckOutEmpty(file)
	var oe *Error
	require.True(t, errors.As(err, &oe))
	assert.Equal(t, OptionOut, oe.Option)
	assert.Equal(t, file, oe.Value)
	assert.EqualError(t, oe.Err, "not a directory (want a new or empty directory)")
	assert.EqualError(t, CheckOutEmpty(dir), "out "+dir+": already holds a file (f) (want a new or empty directory)")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "g"), nil, 0o600))
	assert.EqualError(t, CheckOutEmpty(dir), "out "+dir+": already holds 2 files (f, ...) (want a new or empty directory)")

	never := func(string) (string, bool) { return "", false }
	assert.NoError(t, CheckOut(dir, never, "anything"), "holds decides what counts")
}
