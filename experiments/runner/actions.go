package runner

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/scenario"
)

// action performs one kind of step. The runner wraps every action the same way (the
// traffic window, the protocol checks, the expectations, the checkpoint); an action only
// does its own part.
type action interface {
	// budget is the time the action spends on purpose (a held outage, a wait), added to
	// the step's timeout.
	budget(r *Run, st scenario.Step) time.Duration
	// run performs the action. An error is a failure to act (not an expectation).
	run(ctx context.Context, r *Run, s *stepRun) error
	// verify checks what the action itself proves, after the client accepted the state.
	verify(ctx context.Context, r *Run, s *stepRun)
}

// actions is the one handler per scenario action.
var actions = map[scenario.Action]action{
	scenario.Publish:             publishAction{},
	scenario.RestartEnvoy:        restartEnvoyAction{},
	scenario.KillEnvoy:           restartEnvoyAction{kill: true},
	scenario.RestartControlPlane: restartControlPlaneAction{},
	scenario.Wait:                waitAction{},
}

// publish applies a change to the desired state and publishes it.
func (r *Run) publish(ctx context.Context, c scenario.Change) (*resources.Set, error) {
	prev := r.host.cp().Publisher().Current()
	set, err := r.host.publish(ctx, c)
	if err != nil {
		return nil, err
	}
	r.out.say("  published version %s (%s)", set.Version, set.Describe(prev))
	return set, nil
}

type publishAction struct{}

func (publishAction) budget(*Run, scenario.Step) time.Duration { return 0 }

func (publishAction) run(ctx context.Context, r *Run, s *stepRun) error {
	if len(s.st.Burst) == 0 {
		set, err := r.publish(ctx, s.st.Change)
		if err != nil {
			return err
		}
		s.label = set.Version
	}
	t0 := time.Now()
	for i, c := range s.st.Burst {
		if i > 0 {
			if err := sleepCtx(ctx, s.st.BurstEvery); err != nil {
				return err
			}
		}
		set, err := r.host.publish(ctx, c)
		if err != nil {
			return err
		}
		s.published = append(s.published, strconv.Quote(set.Version))
		s.label = set.Version
	}
	if n := len(s.st.Burst); n > 0 {
		s.cp.Burst = &Burst{Publishes: n, DurationMS: float64(time.Since(t0).Microseconds()) / 1000, Versions: s.published}
		r.out.say("  published %d versions in %.1f ms (%s ... %s)", n, s.cp.Burst.DurationMS, s.published[0], s.published[n-1])
	}
	s.cp.PublishedAt = time.Now().UTC().Format(time.RFC3339Nano)
	if !r.data.started {
		// The data plane starts after the first publish, so that its first requests find
		// a state (the order the teaching article uses).
		if err := r.data.start(ctx); err != nil {
			return err
		}
		r.data.started = true
		if err := r.startLoad(); err != nil {
			return err
		}
	}
	return nil
}

func (publishAction) verify(context.Context, *Run, *stepRun) {}

// restartEnvoyAction stops the proxy (cleanly, or with SIGKILL) and starts a new process
// with the same bootstrap.
type restartEnvoyAction struct{ kill bool }

func (restartEnvoyAction) budget(*Run, scenario.Step) time.Duration { return 0 }

func (a restartEnvoyAction) run(ctx context.Context, r *Run, s *stepRun) error {
	opened, _ := r.track.streams(r.host.server())
	if a.kill {
		if err := r.data.crash(ctx); err != nil { // the exit is on purpose
			return err
		}
	} else if err := r.data.stop(ctx); err != nil {
		return fmt.Errorf("stop %s: %w", r.data.kind(), err)
	}
	err := r.wait(ctx, "old stream closed", func() (bool, error) {
		_, closed := r.track.streams(r.host.server())
		return closed >= opened, nil
	})
	s.check("the old stream closed", err == nil, errText(err))
	if err := r.data.start(ctx); err != nil {
		return err
	}
	how := "restarted"
	if a.kill {
		how = "killed (SIGKILL) and started again"
	}
	r.out.say("  %s %s", clientNoun(r.data.kind()), how)
	err = r.wait(ctx, "new stream", func() (bool, error) {
		o, _ := r.track.streams(r.host.server())
		return o > opened, nil
	})
	s.check("a new stream opened", err == nil, errText(err))
	return nil
}

func (restartEnvoyAction) verify(ctx context.Context, r *Run, s *stepRun) {
	r.checkResubscribed(ctx, s)
}

// waitAction does nothing for the step's duration; the traffic window keeps probing.
type waitAction struct{}

func (waitAction) budget(_ *Run, st scenario.Step) time.Duration { return st.Duration }

func (waitAction) run(ctx context.Context, r *Run, s *stepRun) error {
	if s.st.Duration > 0 { // "wait: 0s" is a step of expectations only: nothing to say
		r.out.say("  waiting %s", s.st.Duration)
	}
	return sleepCtx(ctx, s.st.Duration)
}

func (waitAction) verify(context.Context, *Run, *stepRun) {}

// sleepCtx sleeps for d, or until ctx is done (its error then).
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
