package testenv

import (
	"testing"

	"go.uber.org/goleak"
)

// LeakOptions are the goleak options of every leak check in the lab's tests: a test or
// package may leave no goroutine behind that was not running when the check began.
// Call it where the check begins (as TestMain's argument to goleak.VerifyTestMain, which
// evaluates it before m.Run).
//
// What goleak tolerates by default, and why those are not leaks: the testing package's
// own goroutines (the test runner, parent tests waiting in (*T).Run, parallel tests
// waiting in (*T).Parallel, the fuzzing coordinator), which live as long as the binary;
// the os/signal watcher (signal_recv, signal.loop, runtime.ensureSigM) a test binary or
// signal.Notify starts once and never stops; runtime/trace's reader under -trace; and
// goroutines in a syscall at the runtime's goexit (cgo's). IgnoreCurrent adds the
// baseline: goroutines already running when the check began (package init's, a parent
// test's) belong to someone else.
//
// goleak retries for about half a second before it reports, which covers servers and
// clients that shut down asynchronously (gRPC transports, HTTP connections) once the
// test has closed them and waited for their Serve/Close to return.
func LeakOptions() []goleak.Option {
	return []goleak.Option{goleak.IgnoreCurrent()}
}

// VerifyNoLeaks checks, when t and its cleanups are done, that t left no goroutine
// behind. Call it first in a test (or its helper) so that its check runs after every
// cleanup registered later. Tests that use it must not run in parallel with others:
// their goroutines would be counted as t's.
func VerifyNoLeaks(t testing.TB) {
	t.Helper()
	opts := LeakOptions()
	t.Cleanup(func() { goleak.VerifyNone(t, opts...) })
}
