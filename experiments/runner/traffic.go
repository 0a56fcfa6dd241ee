package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/xds-workbench/lab/experiments/load"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// Load is steady traffic through Envoy for the whole run (lab run --load): Rate requests
// per second over Connections connections, HTTP/1.1 keep-alive or HTTP/2.
type Load struct {
	Rate        int
	Connections int
	Protocol    load.Protocol
	// Path is what the load requests (the scenario's first request path when empty).
	Path string
}

func (l Load) on() bool { return l.Rate > 0 }

// check refuses an absurd load, or a load without Envoy, before anything starts.
func (l Load) check(envoyRuns bool) error {
	if !l.on() {
		return nil
	}
	if !envoyRuns {
		return errors.New("--load needs real Envoy: the simulated client has no listener to load")
	}
	o := load.Options{Rate: l.Rate, Connections: max(l.Connections, 1), Protocol: l.Protocol, Target: "http://" + loopback.Addr(1) + "/"}
	return o.Check()
}

// startLoad starts the load on the listener, once the data plane is up.
func (r *Run) startLoad() error {
	l := r.o.Load
	if !l.on() || r.load != nil {
		return nil
	}
	path := l.Path
	if path == "" {
		path = "/quote?sku=paper"
		if q, ok := r.firstRequest(r.sc.Steps[0]); ok {
			path = q.Path
		}
	}
	g, err := load.Start(r.life, load.Options{Rate: l.Rate, Connections: max(l.Connections, 1), Protocol: l.Protocol,
		Target: "http://" + loopback.Addr(r.o.ListenerPort) + path, IDPrefix: r.o.Mode + "-load", Header: http.Header{}})
	if err != nil {
		return fmt.Errorf("start load: %w", err)
	}
	r.load, r.loadPath = g, path
	r.say("  load: %d requests/s over %d %s connection(s) to %s", l.Rate, max(l.Connections, 1), g.Options().Protocol, path)
	return nil
}

// stepMove measures, for a step whose first request expectation names another backend
// than the last step's, how the load moved: from the publish to the first and the last
// answer of the old backend, and to the first request after which every answer was new.
func (r *Run) stepMove(s *stepRun, from time.Time) *load.Transition {
	if r.load == nil {
		return nil
	}
	q, ok := r.firstRequest(s.st)
	if !ok || q.Backend == "" || r.lastGood.Backend == "" || q.Backend == r.lastGood.Backend {
		return nil
	}
	at := from
	if s.cp.PublishedAt != "" {
		if t, err := time.Parse(time.RFC3339Nano, s.cp.PublishedAt); err == nil {
			at = t
		}
	}
	tr := load.Transit(r.load.Responses(), at, time.Now(), r.lastGood.Backend, q.Backend)
	return &tr
}

// stepTraffic counts the load's responses to requests sent during the step (waiting for
// every one it sent), writes them to xds.log (runs of equal answers folded, every
// failure kept) with one traffic summary, and returns the summary for the checkpoint.
func (r *Run) stepTraffic(ctx context.Context, from time.Time) *xdslog.Traffic {
	if r.load == nil {
		return nil
	}
	to := time.Now()
	if err := r.load.Settle(ctx); err != nil {
		r.say("  %v", err)
	}
	var in []load.Response
	for _, resp := range r.load.Responses() {
		if !resp.Sent.Before(from) && resp.Sent.Before(to) {
			in = append(in, resp)
		}
	}
	var flags map[string]string
	if len(in) > 0 {
		flags = map[string]string{}
		for id, a := range accessFlags(r.dir, in[len(in)-1].ID) {
			flags[id] = a.Flags
		}
	}
	sum := load.Summarize(in, from, to, float64(r.o.Load.Rate), flags)
	probes := make([]probe, len(in))
	for i, resp := range in {
		o := Observation{RequestID: resp.ID, Path: r.loadPath, Status: resp.Status, Error: resp.Error, BodyBackend: resp.Backend,
			Answered: resp.Done().UTC(), Flags: flags[resp.ID]}
		o.Class = Classify(o.Status, o.Flags)
		probes[i] = probe{obs: o}
	}
	r.recordProbes(probes, r.loadPath, xdslog.ProbeLoad)
	t := &sum
	t.Protocol, t.Connections = string(r.load.Options().Protocol), r.load.Options().Connections
	r.rec.Emit(xdslog.Event{Event: xdslog.EventTraffic, Traffic: t})
	r.say("  load: %d requests (%.0f/s of %.0f asked), %v, failures %v, p99 %.1f ms", t.Requests, t.AchievedRate, t.AskedRate, t.ByBackend, t.Failures, t.P99MS)
	return t
}

// stopLoad ends the load (teardown).
func (r *Run) stopLoad() {
	if r.load != nil {
		r.load.Stop()
	}
}
