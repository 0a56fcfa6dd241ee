package progress

import (
	"fmt"
	"io"
	"sync"
)

// Writer passes progress lines to w until a write fails, then drops them: a
// closed standard output (lab run | head) must cost the progress, never the run or its
// evidence. The first failure is said once on errOut (itself ignored if that fails too).
// Writes never fail, so a caller's own error handling never trips on lost progress.
type Writer struct {
	mu     sync.Mutex
	w      io.Writer
	errOut io.Writer
	who    string // "lab run", to prefix the notice
	err    error
}

// NewWriter is a Writer to w that says on errOut, prefixed with who, when it stops.
func NewWriter(w, errOut io.Writer, who string) *Writer {
	return &Writer{w: w, errOut: errOut, who: who}
}

func (p *Writer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return len(b), nil
	}
	if _, err := p.w.Write(b); err != nil {
		p.err = err
		fmt.Fprintf(p.errOut, "%s: progress output lost from here (%v); the command goes on\n", p.who, err)
	}
	return len(b), nil
}

// Err is the write error that stopped the progress, if any.
func (p *Writer) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}
