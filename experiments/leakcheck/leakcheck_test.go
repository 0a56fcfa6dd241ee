package leakcheck

import (
	"strings"
	"testing"
	"time"
)

func TestCheckReportsLeakedStack(t *testing.T) {
	base := Take()
	stop := make(chan struct{})
	go leakyWorker(stop)
	err := base.Check(100 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "leakyWorker") {
		t.Fatalf("want an error naming leakyWorker, got %v", err)
	}
	close(stop)
	if err := base.Check(5 * time.Second); err != nil {
		t.Fatalf("after the worker returned: %v", err)
	}
}

func TestCheckWaitsForShortLivedGoroutines(t *testing.T) {
	base := Take()
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(50 * time.Millisecond) // a goroutine that ends on its own
	}()
	if err := base.Check(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	<-done
}

func leakyWorker(stop chan struct{}) { <-stop }
