// Package leakcheck finds goroutines a test left running: it snapshots the goroutines at
// a starting point and, at the end, waits (with a deadline) until every goroutine started
// since then has exited, apart from the runtime's and the testing package's own. It
// reports the stacks of those that did not.
//
// It is being replaced by go.uber.org/goleak (experiments/testenv.LeakOptions and
// VerifyNoLeaks); its one remaining user is experiments/gcpserver's TestMain, after which
// this package is deleted.
package leakcheck

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Timeout is how long Check waits for goroutines to finish by default: servers and
// clients shut down asynchronously (gRPC transports, HTTP connections).
const Timeout = 10 * time.Second

// ignored are functions whose goroutines are not leaks: the runtime's and the testing
// package's long-lived helpers, and the signal watcher a test binary starts once.
var ignored = []string{
	"testing.(*M).",
	"testing.runTests",
	"testing.tRunner",
	"testing.(*T).Run",
	"testing.runFuzzing",
	"testing.(*F).Fuzz",
	"os/signal.signal_recv",
	"os/signal.loop",
	"runtime.ensureSigM",
	"runtime.ReadTrace",
	"runtime/trace.Start",
	"internal/fuzz.",
}

// Goroutine is one goroutine from runtime.Stack.
type Goroutine struct {
	ID    uint64
	Stack string
}

// Baseline is the set of goroutines alive at a starting point.
type Baseline map[uint64]bool

// Take snapshots the goroutines alive now.
func Take() Baseline {
	b := Baseline{}
	for _, g := range All() {
		b[g.ID] = true
	}
	return b
}

// All returns every user goroutine with its stack.
func All() []Goroutine {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []Goroutine
	for _, block := range bytes.Split(buf, []byte("\n\n")) {
		s := strings.TrimSpace(string(block))
		rest, ok := strings.CutPrefix(s, "goroutine ")
		if !ok {
			continue
		}
		idText, _, _ := strings.Cut(rest, " ")
		id, err := strconv.ParseUint(idText, 10, 64)
		if err != nil {
			continue
		}
		out = append(out, Goroutine{ID: id, Stack: s})
	}
	return out
}

// Leaked returns the goroutines not in b and not ignorable, except the caller's own.
func (b Baseline) Leaked() []Goroutine {
	self := All()[0].ID // runtime.Stack lists the calling goroutine first
	var out []Goroutine
	for _, g := range All() {
		if b[g.ID] || g.ID == self || isIgnored(g.Stack) {
			continue
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, c Goroutine) int { return int(a.ID) - int(c.ID) })
	return out
}

func isIgnored(stack string) bool {
	for _, f := range ignored {
		if strings.Contains(stack, f) {
			return true
		}
	}
	return false
}

// Check polls until no goroutine started since b is left, or timeout passes; it then
// returns an error listing the leaked goroutines with their stacks.
func (b Baseline) Check(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		leaked := b.Leaked()
		if len(leaked) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var sb strings.Builder
			fmt.Fprintf(&sb, "%d goroutine(s) still running %s after the end:", len(leaked), timeout)
			for _, g := range leaked {
				sb.WriteString("\n\n")
				sb.WriteString(g.Stack)
			}
			return fmt.Errorf("%s", sb.String())
		}
		time.Sleep(20 * time.Millisecond) // polling interval, bounded by the deadline
	}
}

// Main runs a package's tests and then checks that they left no goroutine behind; use
// it as `func TestMain(m *testing.M) { os.Exit(leakcheck.Main(m)) }`.
func Main(m *testing.M) int {
	base := Take()
	code := m.Run()
	if err := base.Check(Timeout); err != nil {
		fmt.Fprintln(os.Stderr, "leakcheck:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Verify checks, when t and its cleanups are done, that t left no goroutine behind.
// Call it first in a test (or its helper) so that its check runs after every cleanup
// registered later. Tests that use it must not run in parallel with others.
func Verify(t testing.TB) {
	t.Helper()
	base := Take()
	t.Cleanup(func() {
		if err := base.Check(Timeout); err != nil {
			t.Errorf("leakcheck: %v", err)
		}
	})
}
