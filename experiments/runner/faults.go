package runner

import (
	"context"
	"errors"
	"fmt"
)

// errProxyExited stops a wait so that the runner can deal with the dead proxy.
var errProxyExited = errors.New("proxy exited")

// wait is tracker.waitFor that also watches the proxy: when it dies unexpectedly the
// exit is recorded (progress line and a check naming the exit status), the proxy is
// restarted once and the wait goes on. A second death in the same step ends the wait
// with an error naming both, and that error becomes the step's failure.
func (r *Run) wait(ctx context.Context, what string, cond func() (bool, error)) error {
	for {
		if r.steps.cur != nil && r.steps.cur.fault != nil {
			return r.steps.cur.fault
		}
		err := r.track.waitFor(ctx, what, func() (bool, error) {
			if r.data.died() {
				return false, errProxyExited
			}
			return cond()
		})
		if !errors.Is(err, errProxyExited) {
			return err
		}
		if err := r.recoverProxy(ctx, what); err != nil {
			return err
		}
	}
}

// recoverProxy handles an unexpected proxy exit noticed while waiting for what.
func (r *Run) recoverProxy(ctx context.Context, what string) error {
	exit := fmt.Sprintf("%s exited: %s", clientNoun(r.data.kind()), exitText(r.data.client.Err()))
	// Reap the dead process's leftovers (its temporary admin-address directory); Stop
	// returns at once for a process that has exited.
	_ = r.data.stop(ctx)
	r.out.say("  %s (while waiting for %s)", exit, what)
	cur := r.steps.cur
	if cur == nil {
		// Not inside a step (cannot happen today: every wait runs in one).
		return fmt.Errorf("%s while waiting for %s", exit, what)
	}
	if cur.cp.ProxyRestarts >= 1 {
		cur.fault = fmt.Errorf("%s again while waiting for %s, after one restart in this step; not restarted again", exit, what)
		cur.check(exit, false, cur.fault.Error())
		r.out.say("  step fails: %v", cur.fault)
		return cur.fault
	}
	cur.cp.ProxyRestarts++
	if err := r.data.start(ctx); err != nil {
		cur.fault = fmt.Errorf("%s while waiting for %s, and the restart failed: %v", exit, what, err)
		cur.check(exit, false, cur.fault.Error())
		return cur.fault
	}
	// The exit was dealt with: the check holds if the step then completes.
	cur.check(exit, true, fmt.Sprintf("while waiting for %s; restarted it (pid %d) and kept waiting", what, r.data.pid()))
	r.out.say("  %s restarted (pid %d); still waiting for %s", clientNoun(r.data.kind()), r.data.pid(), what)
	return nil
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
