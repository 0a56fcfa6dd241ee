package bench

import (
	"context"
	"fmt"
	"time"
)

// waitChange blocks until check reports that its condition holds, re-checking each
// time the channel check returned with it closes (the observer's next event), until
// ctx ends or, when quiet > 0, no event came for quiet; it returns whether the
// condition held. check reads the observer's state and channel under its lock, so a
// change between the check and the wait is not missed. The meter and the on-demand
// trace wait alike.
func waitChange(ctx context.Context, what string, quiet time.Duration, check func() (bool, <-chan struct{})) (bool, error) {
	for {
		ok, changed := check()
		if ok {
			return true, nil
		}
		var idle <-chan time.Time
		if quiet > 0 {
			idle = time.After(quiet)
		}
		select {
		case <-changed:
		case <-idle:
			return false, nil
		case <-ctx.Done():
			return false, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}
