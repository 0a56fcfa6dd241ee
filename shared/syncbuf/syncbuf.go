// Package syncbuf is a bytes.Buffer that goroutines may write while a test reads it.
//
// Recorders, progress reporters and child processes write their output from their own
// goroutines while the test polls what has arrived so far; a bare bytes.Buffer would be a
// data race there. Every test that needs such a writer used to carry its own copy.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is an io.Writer whose content can be read at any time. The zero value is empty
// and ready to use; a Buffer must not be copied after first use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Bytes returns a copy of everything written so far: later writes do not change it.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// Take returns what was written since the last Take and forgets it, so that a reader
// polling a long-lived writer (a fuzz worker's log, drained after each input) reads
// only the new part.
func (b *Buffer) Take() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	b.buf.Reset()
	return s
}
