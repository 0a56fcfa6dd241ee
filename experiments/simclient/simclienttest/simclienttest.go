// Package simclienttest runs a simulated Envoy in the background of a test. Every test
// that drives a simclient.Client needs the same dance: Run it on its own goroutine, and
// at the end cancel it and wait for Run to return, so that nothing outlives the test
// (goleak checks that).
package simclienttest

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/xds-workbench/lab/experiments/simclient"
)

// Start runs c on conn until ctx ends or stop is called. stop cancels the client and
// waits for Run to return; it is safe to call more than once. Closing conn is the
// caller's: some tests share one connection between clients.
func Start(ctx context.Context, c *simclient.Client, conn grpc.ClientConnInterface) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Run(ctx, conn)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}

// WaitFor waits until c's state satisfies cond and returns that state; when within
// passes first it fails t, naming what it waited for.
func WaitFor(t testing.TB, c *simclient.Client, within time.Duration, what string, cond func(simclient.State) bool) simclient.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	s, err := c.WaitFor(ctx, cond)
	if err != nil {
		t.Fatalf("waiting %s for %s: %v", within, what, err)
	}
	return s
}
