package progress

import (
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failingWriter fails every write after the first n bytes-worth of calls.
type failingWriter struct {
	calls, okCalls int
	got            strings.Builder
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.calls++
	if w.calls > w.okCalls {
		return 0, syscall.EPIPE
	}
	return w.got.Write(p)
}

// TestWriterDropsAfterFirstError: a failed write is reported once, never to the
// caller, and nothing more is attempted.
func TestWriterDropsAfterFirstError(t *testing.T) {
	w := &failingWriter{okCalls: 1}
	var errOut strings.Builder
	p := NewWriter(w, &errOut, "lab bench")
	for _, line := range []string{"one\n", "two\n", "three\n"} {
		n, err := p.Write([]byte(line))
		require.NoError(t, err, "progress never fails its caller")
		assert.Equal(t, len(line), n)
	}
	assert.Equal(t, "one\n", w.got.String())
	assert.Equal(t, 2, w.calls, "nothing is written after the first failure")
	assert.ErrorIs(t, p.Err(), syscall.EPIPE)
	assert.Equal(t, "lab bench: progress output lost from here (broken pipe); the command goes on\n", errOut.String())
}
