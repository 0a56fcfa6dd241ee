package analysis

import (
	"fmt"
	"maps"
	"time"

	"github.com/xds-workbench/lab/shared/xdslog"
)

// Probes are a step's data-plane probes: every dataplane event of the step, each weighted
// by how many probes it stands for (Event.Represents), so that a sampled traffic window
// counts what was sent, not what was written. This is the one rule: summary.json and
// every `lab compare` format show these figures as they are.
type Probes struct {
	// Probes is the weighted count; OK the 2xx answers among them, Failed the rest
	// (including no answer at all).
	Probes int `json:"probes"`
	OK     int `json:"ok"`
	Failed int `json:"failed"`
	// Kinds splits Probes by why they were sent.
	Kinds ProbeKinds `json:"kinds"`
	// Failures counts failed probes by FailureKey ("503 NC", "0 no-response").
	Failures map[string]int `json:"failures,omitempty"`
	// Backends counts 2xx probes by the backend that answered (UnknownBackend when none
	// said).
	Backends map[string]int `json:"backends,omitempty"`
	// Clients counts probes by the client that answered: "envoy", "simulated", or
	// UnnamedClient when the event names none.
	Clients map[string]int `json:"clients"`
	// Simulated is true when any probe was answered by the simulated client (Client
	// "simulated"): no proxy forwarded it, and renderers must label it SIMULATED.
	Simulated bool `json:"simulated"`
	// FirstFailureMS and LastFailureMS are the times of the earliest and latest failed
	// probe from the step's start (its step event, else its first event); ErrorWindowMS
	// is last minus first. Absent when nothing failed (or no failure has a time).
	FirstFailureMS *float64 `json:"first_failure_ms,omitempty"`
	LastFailureMS  *float64 `json:"last_failure_ms,omitempty"`
	ErrorWindowMS  *float64 `json:"error_window_ms,omitempty"`
	// StepMS is the step's length on the same axis: from its start to its latest event
	// (a renderer draws the error window against it).
	StepMS float64 `json:"step_ms"`
}

// ProbeKinds are weighted probe counts by xdslog.Probe* kind. A data-plane event without
// a probe field (logs older than the field) is a request: that is the only kind the
// runner sent then.
type ProbeKinds struct {
	Request int `json:"request"`
	Window  int `json:"window"`
	Outage  int `json:"outage"`
	// Other counts kinds this version does not know.
	Other int `json:"other,omitempty"`
}

// Bounds on what a log can make the tally hold: a hostile or corrupt log could otherwise
// name a million distinct flags or backends, or claim a probe stands for 2^62 others.
const (
	// maxProbeKeys is how many distinct failure keys (and backends) a step keeps; the
	// rest are counted under OtherKey.
	maxProbeKeys = 16
	// maxRepresents caps one event's weight: no window sends anywhere near a billion
	// probes, and the cap keeps every sum far from overflowing.
	maxRepresents = 1_000_000_000
)

// Keys of Probes' maps that are not values from the log: OtherKey collects failure keys
// and backends past maxProbeKeys, UnknownBackend counts 2xx probes that name no backend,
// UnnamedClient probes that name no client.
const (
	OtherKey       = "other"
	UnknownBackend = "unknown"
	UnnamedClient  = "unnamed"
)

// ProbeWeight is how many probes a data-plane event stands for: Represents when 2 or
// more, else 1 (0 and nonsense values mean the event is one probe).
func ProbeWeight(e xdslog.Event) int {
	switch {
	case e.Represents < 2:
		return 1
	case e.Represents > maxRepresents:
		return maxRepresents
	}
	return e.Represents
}

// ProbeKind is why a data-plane event was sent; a missing Probe (older logs) is a
// request.
func ProbeKind(e xdslog.Event) string {
	if e.Probe == "" {
		return xdslog.ProbeRequest
	}
	return e.Probe
}

// ProbeOK reports whether a probe got a 2xx answer.
func ProbeOK(status int) bool { return status >= 200 && status <= 299 }

// FailureKey groups a failed probe: "STATUS FLAGS" ("503 NC", "404 NR"), the status alone
// when Envoy set no flags ("" or its "-"), and "0 no-response" when nothing answered.
func FailureKey(status int, flags string) string {
	switch {
	case status == 0:
		return "0 no-response"
	case flags == "" || flags == "-":
		return fmt.Sprint(status)
	}
	return fmt.Sprintf("%d %s", status, flags)
}

// probeTally is a step's Probes while they are counted: failure times are kept as times
// because the step's start may be logged after a probe (Probes are finished relative to
// it in finishLocked).
type probeTally struct {
	p                   Probes
	firstFail, lastFail time.Time
}

// probe counts one data-plane event.
func (st *Step) probe(e xdslog.Event) {
	if st.probes == nil {
		st.probes = &probeTally{p: Probes{Clients: map[string]int{}}}
	}
	t := st.probes
	w := ProbeWeight(e)
	t.p.Probes += w
	switch ProbeKind(e) {
	case xdslog.ProbeRequest:
		t.p.Kinds.Request += w
	case xdslog.ProbeWindow:
		t.p.Kinds.Window += w
	case xdslog.ProbeOutage:
		t.p.Kinds.Outage += w
	default:
		t.p.Kinds.Other += w
	}
	client := e.Client
	if client == "" {
		client = UnnamedClient
	}
	t.p.Clients = countKey(t.p.Clients, client, w)
	t.p.Simulated = t.p.Simulated || e.Client == "simulated"
	if ProbeOK(e.Status) {
		t.p.OK += w
		backend := e.Backend
		if backend == "" {
			backend = UnknownBackend
		}
		t.p.Backends = countKey(t.p.Backends, backend, w)
		return
	}
	t.p.Failed += w
	t.p.Failures = countKey(t.p.Failures, FailureKey(e.Status, e.Flags), w)
	if e.TS.IsZero() {
		return // counted, but it cannot place the window
	}
	if t.firstFail.IsZero() || e.TS.Before(t.firstFail) {
		t.firstFail = e.TS
	}
	if t.lastFail.IsZero() || e.TS.After(t.lastFail) {
		t.lastFail = e.TS
	}
}

// countKey adds w to m[k], or to m[OtherKey] once a new key would leave no room for it:
// m never holds more than maxProbeKeys keys.
func countKey(m map[string]int, k string, w int) map[string]int {
	if m == nil {
		m = map[string]int{}
	}
	if _, ok := m[k]; !ok && len(m) >= maxProbeKeys-1 {
		k = OtherKey
	}
	m[k] += w
	return m
}

// probesFrom finishes a step's tally: a copy, with the failure times as offsets from the
// step's start and the step's length. Nil when the step had no data-plane event.
func (st *Step) probesFrom() *Probes {
	t := st.probes
	if t == nil {
		return nil
	}
	p := t.p
	p.Failures, p.Backends, p.Clients = maps.Clone(p.Failures), maps.Clone(p.Backends), maps.Clone(p.Clients)
	start := st.stepStart()
	if !t.firstFail.IsZero() { // then lastFail is set too, and not before it
		first, last := msSince(start, t.firstFail), msSince(start, t.lastFail)
		length := last - first
		p.FirstFailureMS, p.LastFailureMS, p.ErrorWindowMS = &first, &last, &length
	}
	p.StepMS = max(msSince(start, st.end), 0)
	return &p
}

// stepStart is where a step's time axis begins: its step event (the runner writes it as
// the step starts), else the step's first event.
func (st *Step) stepStart() time.Time {
	if !st.stepTS.IsZero() {
		return st.stepTS
	}
	return st.start
}

func msSince(start, t time.Time) float64 { return float64(t.Sub(start).Microseconds()) / 1000 }
