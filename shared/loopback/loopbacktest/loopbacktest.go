// Package loopbacktest gives tests distinct free loopback ports, released when the test
// (and every cleanup registered before this call) is done. Tests of cmd/lab, serve and
// the runner use it; only _test.go files import it.
package loopbacktest

import (
	"testing"

	"github.com/xds-workbench/lab/shared/loopback"
)

// FreePorts returns n distinct free loopback ports.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	seen := map[int]bool{}
	var out []int
	for len(out) < n {
		p, err := loopback.FreePort()
		if err != nil {
			t.Fatalf("free port: %v", err)
		}
		t.Cleanup(func() { loopback.Release(p) }) // after the cleanups the caller registers next
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// ClosedAddr is a 127.0.0.1:PORT nothing listens on (it was bound and closed): what a
// test dials to see a refusal.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	l, err := loopback.Listen(0)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return addr
}
