package runner

import (
	"context"
	"time"

	"github.com/xds-workbench/lab/experiments/load"
)

// steadyLoad is the run's steady traffic (lab run --load, or the scenario's load) and
// where its count stands. Each step counts the responses to the requests sent since the
// last step's count, so the steps' counts add up to every request the load sent.
type steadyLoad struct {
	gen  *load.Generator // nil until the load starts, and without a load
	path string          // what it requests
	// from is where the next step's count starts (the last count's end); overflowCounted
	// is the generator's overflow already in a step's count.
	from            time.Time
	overflowCounted int
	// expiredSaid: the run said once that the load hit its duration bound.
	expiredSaid bool
	// note says why the scenario's load does not run ("" when it does, or has none).
	note string
}

// running reports whether the load was started.
func (l *steadyLoad) running() bool { return l.gen != nil }

// start counts g's requests to path from now on.
func (l *steadyLoad) start(g *load.Generator, path string) {
	l.gen, l.path, l.from = g, path, time.Now()
}

// take returns the responses to requests sent in [from, to): from the last count's end
// to now, once the load has settled (settleErr says why it did not); at the end, after
// stopping the load, everything it sent (to just after the last request).
func (l *steadyLoad) take(ctx context.Context, end bool) (in []load.Response, from, to time.Time, settleErr error) {
	from, to = l.from, time.Now()
	if end {
		l.gen.Stop()
		to = to.Add(time.Hour) // everything it sent
	} else {
		settleErr = l.gen.Settle(ctx)
	}
	for _, resp := range l.gen.Responses() {
		if !resp.Sent.Before(from) && resp.Sent.Before(to) {
			in = append(in, resp)
		}
	}
	if end && len(in) > 0 {
		to = in[len(in)-1].Sent.Add(time.Nanosecond)
	}
	return in, from, to, settleErr
}

// newOverflow is the generator's overflow not yet in a count, which it now is.
func (l *steadyLoad) newOverflow() int {
	n := l.gen.Overflow() - l.overflowCounted
	l.overflowCounted += n
	return n
}

// advance starts the next count at to, and lets the generator forget what came before.
func (l *steadyLoad) advance(to time.Time) {
	l.from = to
	l.gen.Forget(to)
}

// probes are the responses in as probes of the load's path, with Envoy's response flags
// (by request ID) and their class.
func (l *steadyLoad) probes(in []load.Response, flags map[string]string) []probe {
	probes := make([]probe, len(in))
	for i, resp := range in {
		o := Observation{RequestID: resp.ID, Path: l.path, Status: resp.Status, Error: resp.Error, BodyBackend: resp.Backend,
			Answered: resp.Done().UTC(), Flags: flags[resp.ID]}
		o.Class = Classify(o.Status, o.Flags)
		probes[i] = probe{obs: o}
	}
	return probes
}

// stop ends the load, if it runs (teardown).
func (l *steadyLoad) stop() {
	if l.gen != nil {
		l.gen.Stop()
	}
}
