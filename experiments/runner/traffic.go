package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/xds-workbench/lab/experiments/inventory"
	"github.com/xds-workbench/lab/experiments/load"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/option"
	"github.com/xds-workbench/lab/shared/scenario"
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
		return &option.Error{Option: OptionLoad, Err: errors.New("needs real Envoy: the load is sent to Envoy's listener, which the other clients do not have")}
	}
	o := load.Options{Rate: l.Rate, Connections: max(l.Connections, 1), Protocol: l.Protocol, Target: "http://" + loopback.Addr(1) + "/"}
	return o.Check()
}

// scenarioLoad is the run's load: --load when given, else the scenario's own, which a
// run without Envoy skips (only Envoy's listener is loaded), saying so in note.
func scenarioLoad(l Load, sc *scenario.Scenario, envoyRuns bool) (Load, string, error) {
	if l.on() || sc.Load == nil {
		return l, "", nil
	}
	if !envoyRuns {
		return l, fmt.Sprintf("load: the scenario's %d requests/s are NOT run: the load is sent to Envoy's listener only; its traffic checks are skipped", sc.Load.Rate), nil
	}
	p, err := load.ParseProtocol(sc.Load.Protocol)
	if err != nil {
		return l, "", fmt.Errorf("%s:%d: %w", sc.File, sc.Load.Line, err)
	}
	out := Load{Rate: sc.Load.Rate, Connections: sc.Load.Connections, Protocol: p, Path: sc.Load.Path}
	if err := out.check(true); err != nil {
		return l, "", fmt.Errorf("%s:%d: %w", sc.File, sc.Load.Line, err)
	}
	return out, "", nil
}

// startLoad starts the load on the listener, once the data plane is up.
func (r *Run) startLoad() error {
	l := r.o.Load
	if !l.on() || r.load.running() {
		return nil
	}
	path := l.Path
	if path == "" {
		path = "/quote?sku=paper"
		if q, ok := r.expects.firstRequest(r.sc.Steps[0]); ok {
			path = q.Path
		}
	}
	g, err := load.Start(r.host.life, load.Options{Rate: l.Rate, Connections: max(l.Connections, 1), Protocol: l.Protocol,
		Target: "http://" + loopback.Addr(r.o.ListenerPort) + path, IDPrefix: r.o.Mode.String() + "-load", Header: http.Header{}})
	if err != nil {
		return fmt.Errorf("start load: %w", err)
	}
	r.load.start(g, path)
	r.out.say("  load: %d requests/s over %d %s connection(s) to %s", l.Rate, max(l.Connections, 1), g.Options().Protocol, path)
	return nil
}

// stepMove measures, for a step whose first request expectation names another answer
// than the last step's (another backend, or Envoy's 503 NC after a removal), how the
// load moved: from the publish to the first and the last old answer, and to the first
// request after which every answer was the new one.
func (r *Run) stepMove(s *stepRun, rs []load.Response, from, to time.Time, flags map[string]string) *xdslog.TrafficMove {
	q, ok := r.expects.firstRequest(s.st)
	old, new := expectedAnswer(r.steps.lastGood), expectedAnswer(q)
	if !ok || old == "" || new == "" || old == new {
		return nil
	}
	at := from
	if s.cp.PublishedAt != "" {
		if t, err := time.Parse(time.RFC3339Nano, s.cp.PublishedAt); err == nil {
			at = t
		}
	}
	mv := load.Transit(rs, at, to, old, new, flags)
	return &mv
}

// expectedAnswer is what a request expectation says the load's answers should be, named
// as load.Answer names them ("" when it names no backend and no failure).
func expectedAnswer(q scenario.RequestExpect) string {
	switch {
	case q.Status == 0:
		return ""
	case q.Status >= 200 && q.Status < 300:
		return q.Backend
	case q.Flags != "":
		return fmt.Sprintf("%d %s", q.Status, q.Flags)
	}
	return fmt.Sprint(q.Status)
}

// stepTraffic counts the load's responses to requests sent since the last step's count
// (so the steps' counts add up to every request the load sent), waiting for every one
// it sent. The last step (end) stops the load first and counts to its end. It checks
// each answer against the backends' own logs, writes the responses to xds.log (runs of
// equal answers folded, every failure kept) with one traffic summary, and returns the
// summary for the checkpoint.
func (r *Run) stepTraffic(ctx context.Context, s *stepRun, end bool) *xdslog.Traffic {
	if !r.load.running() {
		if s != nil && s.st.Expect.Traffic != nil && r.expects.applies(s.st.Expect.Traffic.Filter) {
			why := "the run has no load (lab run --load, or a scenario load)"
			if r.load.note != "" {
				why = "the load is sent to Envoy's listener only"
			}
			s.skip("traffic", why)
		}
		return nil
	}
	if r.load.gen.Expired() && !r.load.expiredSaid {
		r.load.expiredSaid = true
		r.out.say("  load: it ended at its %s bound (load.MaxDuration); later steps get no new requests", load.MaxDuration)
	}
	in, from, to, err := r.load.take(ctx, end)
	if err != nil {
		r.out.say("  %v", err)
	}
	var flags map[string]string
	if len(in) > 0 {
		flags = map[string]string{}
		for id, a := range accessFlags(r.dir, in[len(in)-1].ID) {
			flags[id] = a.Flags
		}
	}
	sum := load.Summarize(in, from, to, float64(r.o.Load.Rate), flags)
	t := &sum
	t.Protocol, t.Connections = string(r.load.gen.Options().Protocol), r.load.gen.Options().Connections
	t.Overflow = r.load.newOverflow()
	t.Requests += t.Overflow
	t.Unlogged, t.Misattributed = r.data.backends.checkLogs(in)
	if s != nil {
		t.Move = r.stepMove(s, in, from, to, flags)
		r.checkTraffic(s, t, in, flags)
	}
	// The responses go to xds.log as probes, with the response flags of Envoy's access log.
	r.host.recordProbes(r.load.probes(in, flags), r.load.path, xdslog.ProbeLoad)
	r.host.rec().Emit(xdslog.Event{Event: xdslog.EventTraffic, Traffic: t})
	r.out.say("%s", trafficLine(t))
	r.load.advance(to)
	return t
}

// trafficLine is the progress line of a step's traffic count.
func trafficLine(t *xdslog.Traffic) string {
	line := fmt.Sprintf("  load: %d requests (%.0f/s of %.0f asked), %v, failures %v, p99 %.1f ms", t.Requests, t.AchievedRate, t.AskedRate, t.ByBackend, t.Failures, t.P99MS)
	if mv := t.Move; mv != nil {
		line += fmt.Sprintf("; %s -> %s: %d old answers after the publish", mv.From, mv.To, mv.OldAfter)
		if mv.LastOldMS != nil {
			line += fmt.Sprintf(", the last at +%.1f ms", *mv.LastOldMS)
		}
		if mv.LastOldAnsweredMS != nil {
			line += fmt.Sprintf(", the last old answer arrived at +%.1f ms", *mv.LastOldAnsweredMS)
		}
		if mv.AllNewMS != nil {
			line += fmt.Sprintf(", all %s from +%.1f ms", mv.To, *mv.AllNewMS)
		}
	}
	if t.FellBehind() {
		line += " (the generator fell behind its rate)"
	}
	if t.Unlogged+t.Misattributed > 0 {
		line += fmt.Sprintf("; backend logs disagree: %d unlogged, %d misattributed", t.Unlogged, t.Misattributed)
	}
	return line
}

// dwell makes a step with a traffic expectation last at least its For with real Envoy,
// so that its share of the load is enough to count; also without load, so that a run
// without load keeps the timing of the run with it (lab sweep compares the two). The
// simulated client has no load and does not wait.
func (r *Run) dwell(ctx context.Context, s *stepRun, began time.Time) {
	e := s.st.Expect.Traffic
	if r.info.Client != ClientEnvoy || e == nil || !r.expects.applies(e.Filter) {
		return
	}
	if d := time.Until(began.Add(e.For)); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// checkTraffic checks the step's traffic expectation against its count.
func (r *Run) checkTraffic(s *stepRun, t *xdslog.Traffic, in []load.Response, flags map[string]string) {
	e := s.st.Expect.Traffic
	if e == nil || !r.expects.applies(e.Filter) {
		return
	}
	failed := t.Requests - t.OK
	summary := fmt.Sprintf("%d requests: %v, failures %v", t.Requests, t.ByBackend, t.Failures)
	s.checkAt(e.Line, "traffic: the load sent requests in the step", t.Requests > 0, summary)
	s.checkAt(e.Line, "traffic: every answer is in its backend's own log",
		t.Unlogged+t.Misattributed == 0, fmt.Sprintf("%d unlogged, %d misattributed", t.Unlogged, t.Misattributed))
	if e.MaxFailures < 1<<30 {
		s.checkAt(e.Line, fmt.Sprintf("traffic: at most %d failed", e.MaxFailures), failed <= e.MaxFailures, summary)
	}
	if e.MinFailures > 0 {
		s.checkAt(e.Line, fmt.Sprintf("traffic: at least %d failed", e.MinFailures), failed >= e.MinFailures, summary)
	}
	if len(e.Failures) > 0 {
		other := outside(t.Failures, e.Failures)
		s.checkAt(e.Line, "traffic: every failure is "+strings.Join(e.Failures, " or "), len(other) == 0, "other failures: "+strings.Join(other, ", "))
	}
	if len(e.Backends) > 0 {
		other := outside(t.ByBackend, e.Backends)
		s.checkAt(e.Line, "traffic: every success came from "+strings.Join(e.Backends, " or "), len(other) == 0, "others: "+strings.Join(other, ", "))
	}
	if e.EndsOn != "" {
		last := "no request"
		ok := false
		if len(in) > 0 {
			l := in[len(in)-1]
			ok = l.OK() && l.Backend == e.EndsOn
			last = "the last answer was " + load.Answer(l, flags[l.ID])
		}
		s.checkAt(e.Line, "traffic: the step ends on "+e.EndsOn, ok, last)
	}
}

// outside lists the counts whose key is not allowed, "KEY xN", in key order.
func outside(counts map[string]int, allowed []string) []string {
	var other []string
	for k, n := range counts {
		if !slices.Contains(allowed, k) {
			other = append(other, fmt.Sprintf("%s x%d", k, n))
		}
	}
	slices.Sort(other)
	return other
}

// checkLogs reads the backends' own request logs and counts the successful
// answers whose request ID no log has (unlogged), or another backend's log has
// (misattributed): the body alone is not the evidence.
func (s *backendSet) checkLogs(in []load.Response) (unlogged, misattributed int) {
	want := map[string]string{}
	for _, resp := range in {
		if resp.OK() && resp.Backend != "" {
			want[resp.ID] = resp.Backend
		}
	}
	if len(want) == 0 {
		return 0, 0
	}
	seen := map[string]string{}
	read := map[string]bool{}
	for _, b := range s.all() {
		if b.LogPath() == "" || read[b.LogPath()] {
			continue
		}
		read[b.LogPath()] = true
		_ = inventory.ScanFile(b.LogPath(), func(l inventory.LogLine) {
			if _, ok := want[l.RequestID]; ok {
				seen[l.RequestID] = l.Backend
			}
		})
	}
	for id, backend := range want {
		switch got, ok := seen[id]; {
		case !ok:
			unlogged++
		case got != backend:
			misattributed++
		}
	}
	return unlogged, misattributed
}
