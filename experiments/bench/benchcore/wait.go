package benchcore

import (
	"context"
	"fmt"
	"time"
)

// WaitChange blocks until check reports that its condition holds, re-checking each
// time the channel check returned with it closes (the observer's next event), until
// ctx ends or, when quiet > 0, no event came for quiet; it returns whether the
// condition held. check reads the observer's state and channel under its lock, so a
// change between the check and the wait is not missed. The meter and the on-demand
// trace wait alike.
func WaitChange(ctx context.Context, what string, quiet time.Duration, check func() (bool, <-chan struct{})) (bool, error) {
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

// Wait returns after d, or ctx's error when it ends first.
func Wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
