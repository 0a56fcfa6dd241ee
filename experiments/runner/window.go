package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// WindowResult is a step's traffic window: probes sent every Every for the whole step.
type WindowResult struct {
	Path      string  `json:"path"`
	EveryMS   float64 `json:"every_ms"`
	Probes    int     `json:"probes"`
	Failures  int     `json:"failures"`
	Simulated bool    `json:"simulated"`
	// Answers counts the probes per answer ("200 v1", "503 NC", "0 no response").
	Answers map[string]int `json:"answers"`
	// FirstFailureMS and LastFailureMS are measured from the step's start; the error
	// window is the time between them.
	FirstFailureMS *float64 `json:"first_failure_ms,omitempty"`
	LastFailureMS  *float64 `json:"last_failure_ms,omitempty"`
	WindowMS       float64  `json:"error_window_ms"`
}

// probe is one window probe's answer.
type probe struct {
	obs Observation
}

func (p probe) failed() bool { return p.obs.Status == 0 || p.obs.Status >= 400 }

func (p probe) answer() string {
	switch {
	case p.obs.Status == 0:
		return "0 no response"
	case p.failed():
		f := p.obs.Flags
		if f == "" {
			f = "-"
		}
		return fmt.Sprintf("%d %s", p.obs.Status, f)
	}
	b := p.obs.Backend()
	if b == "" {
		b = "?"
	}
	return fmt.Sprintf("%d %s", p.obs.Status, b)
}

// window is a step's running traffic window (nil when the step has none).
type window struct {
	exp    scenario.WindowExpect
	ctx    context.Context
	prefix string
	start  time.Time
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	probes []probe
}

// maxWindowProbes bounds one window (a 60 s wait at 1 ms would be 60,000 probes).
const maxWindowProbes = 20000

// startWindow starts the step's probes, if it has a window that applies to this run.
func (r *Run) startWindow(ctx context.Context, s *stepRun) *window {
	w := s.st.Expect.Window
	if w == nil || !r.expects.applies(w.Filter) {
		return nil
	}
	wctx, cancel := context.WithCancel(ctx)
	prefix := fmt.Sprintf("%s-%s-%d-w", r.o.Mode, s.st.Name, r.host.server())
	win := &window{exp: *w, ctx: ctx, prefix: prefix, start: time.Now(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(win.done)
		t := time.NewTicker(w.Every)
		defer t.Stop()
		for n := 1; wctx.Err() == nil && n <= maxWindowProbes; n++ {
			obs := r.data.probe(wctx, w.Request, fmt.Sprintf("%s%d", prefix, n))
			if wctx.Err() != nil && obs.Status == 0 {
				break // cut short by the step's end, not an answer
			}
			if obs.Answered.IsZero() {
				obs.Answered = time.Now().UTC()
			}
			win.mu.Lock()
			win.probes = append(win.probes, probe{obs: obs})
			win.mu.Unlock()
			select {
			case <-wctx.Done():
			case <-t.C:
			}
		}
	}()
	return win
}

// stop ends the window, joins Envoy's access log (the response flags) to its probes,
// checks the expectation, and writes the probes to xds.log: every failure, and runs of
// equal successes as one event each (Represents).
func (w *window) stop(r *Run, s *stepRun) {
	if w == nil {
		return
	}
	w.cancel()
	<-w.done
	// One closing probe, once the step's checks are done: a step faster than the probe
	// interval (the simulated client's) still has its end state in the window.
	obs := r.data.probe(context.WithoutCancel(w.ctx), w.exp.Request, fmt.Sprintf("%s%d", w.prefix, len(w.probes)+1))
	if obs.Answered.IsZero() {
		obs.Answered = time.Now().UTC()
	}
	w.mu.Lock()
	probes := append(slices.Clone(w.probes), probe{obs: obs})
	w.mu.Unlock()
	if r.data.admin() != nil && len(probes) > 0 {
		flags := accessFlags(r.dir, probes[len(probes)-1].obs.RequestID)
		for i := range probes {
			if a, ok := flags[probes[i].obs.RequestID]; ok {
				probes[i].obs.Flags, probes[i].obs.Upstream = a.Flags, a.UpstreamHost
				probes[i].obs.Access = nil
			}
			probes[i].obs.Class = Classify(probes[i].obs.Status, probes[i].obs.Flags)
		}
	}
	res := &WindowResult{Path: w.exp.Path, EveryMS: float64(w.exp.Every.Microseconds()) / 1000, Probes: len(probes), Answers: map[string]int{}}
	var bad []string
	for _, p := range probes {
		res.Simulated = res.Simulated || p.obs.Simulated
		res.Answers[p.answer()]++
		if !p.failed() {
			continue
		}
		res.Failures++
		at := float64(p.obs.Answered.Sub(w.start).Microseconds()) / 1000
		if res.FirstFailureMS == nil {
			res.FirstFailureMS = &at
		}
		res.LastFailureMS = &at
		if len(w.exp.Flags) > 0 && !slices.ContainsFunc(w.exp.Flags, func(f string) bool { return flagHolds(p.obs, f) }) && len(bad) < 5 {
			bad = append(bad, p.answer())
		}
	}
	if res.FirstFailureMS != nil {
		res.WindowMS = *res.LastFailureMS - *res.FirstFailureMS
	}
	s.cp.Window = res
	r.host.recordProbes(probes, w.exp.Path, xdslog.ProbeWindow)
	answers := make([]string, 0, len(res.Answers))
	for a, n := range res.Answers {
		answers = append(answers, fmt.Sprintf("%s x%d", a, n))
	}
	slices.Sort(answers)
	summary := fmt.Sprintf("%d probes every %s: %s; %d failed", res.Probes, w.exp.Every, strings.Join(answers, ", "), res.Failures)
	if res.Failures > 0 {
		summary += fmt.Sprintf(" over %.0f ms", res.WindowMS)
	}
	if res.Simulated {
		summary += " (SIMULATED)"
	}
	r.out.say("  traffic window: %s", summary)
	s.checkAt(w.exp.Line, "traffic window: probes were sent", res.Probes > 0, summary)
	if w.exp.MaxFailures < 1<<30 {
		s.checkAt(w.exp.Line, fmt.Sprintf("traffic window: at most %d failed", w.exp.MaxFailures), res.Failures <= w.exp.MaxFailures, summary)
	}
	if w.exp.MinFailures > 0 {
		s.checkAt(w.exp.Line, fmt.Sprintf("traffic window: at least %d failed", w.exp.MinFailures), res.Failures >= w.exp.MinFailures, summary)
	}
	if len(w.exp.Flags) > 0 {
		s.checkAt(w.exp.Line, "traffic window: every failure carries "+strings.Join(w.exp.Flags, " or "), len(bad) == 0,
			"other failures: "+strings.Join(bad, ", "))
	}
}

// maxProbeEvents bounds the events one batch of probes writes; past it, failures are
// folded into runs like successes.
const maxProbeEvents = 1000

// accessFlags reads Envoy's access log once, after waiting (briefly) for the last
// probe's line: Envoy flushes it every 100 ms.
func accessFlags(dir, lastID string) map[string]envoy.AccessEntry {
	path := dir + "/access.log"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = envoy.WaitAccess(ctx, path, lastID)
	entries, err := envoy.ParseAccessLog(path)
	if err != nil {
		return nil
	}
	out := make(map[string]envoy.AccessEntry, len(entries))
	for _, a := range entries {
		out[a.RequestID] = a
	}
	return out
}
