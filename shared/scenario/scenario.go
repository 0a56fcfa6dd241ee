// Package scenario is the workbench's scenario model, as data: a scenario file names its
// backends and its resources (in Envoy's own v3 form or in short forms), then lists steps,
// each one action (publish a change, restart or kill Envoy, restart the control plane or
// keep it down, wait) and what the evidence must show afterwards. Parse checks a whole
// file before anything runs and reports the first problem as file:line. The built-in pack
// (Builtin, Pack) is the same format, embedded. The model is mode-agnostic: the same
// scenario runs against either protocol and either cache; an expectation that differs
// between them names the mode or cache it applies to.
package scenario

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
)

// Scenario is one parsed and checked scenario file.
type Scenario struct {
	Name        string
	Description string
	// Sources name where the scenario comes from (seed articles, issues).
	Sources []string
	// File is where it was read from ("builtin:<name>" for the pack).
	File string
	// Backends are the inventory backends the scenario starts, in order.
	Backends []string
	// Behaviours are the backends' own behaviours, by name (absent: a plain backend).
	Behaviours map[string]Behaviour
	// Resources by id (the key in the file's resources map).
	Resources map[string]*Resource
	// Bootstrap is YAML merged over Envoy's bootstrap with --config-yaml (real Envoy only).
	Bootstrap string
	// DrainTime is Envoy's drain time for the run (--drain-time-s; 0: Envoy's 600 s):
	// how long a listener replaced by a full update, or a filter chain replaced in
	// place, drains before its connections close. Real Envoy only.
	DrainTime time.Duration
	// Load is steady traffic through Envoy for the whole run (nil: none; lab run --load
	// overrides it).
	Load *LoadSpec
	// OnDemand is what the scenario's Envoy fetches on demand (on_demand: vhds, cds): the
	// on_demand filter on its short-form listeners, the bootstrap without cds_config when
	// clusters are on demand, and the control plane's on-demand answers. It needs delta.
	OnDemand resources.OnDemand
	// NotFor says, per client (only "grpc"), why the scenario does not apply to it (one
	// line, not_for: {grpc: ...}): the runner refuses it for that client as not
	// applicable before anything starts.
	NotFor map[string]string
	// Modes are the protocols the scenario runs in (empty: both); an on-demand scenario
	// runs in delta only.
	Modes []protocol.Mode
	Steps []Step
}

// NotApplicableError is a scenario asked to run where it cannot (a mode it is not for,
// or a data plane that cannot show it). Running the pack, it is a skip with its reason,
// not a failure.
type NotApplicableError struct {
	Scenario string
	// Where is the mode or client asked for ("sotw", "the simulated client").
	Where  string
	Reason error
}

func (e *NotApplicableError) Error() string {
	return fmt.Sprintf("scenario %s does not apply to %s: %v", e.Scenario, e.Where, e.Reason)
}

func (e *NotApplicableError) Unwrap() error { return e.Reason }

// IsNotApplicable reports whether err says a scenario does not apply to the run.
func IsNotApplicable(err error) bool {
	var na *NotApplicableError
	return errors.As(err, &na)
}

// CheckMode refuses a mode the scenario is not for, with the reason: an on-demand
// scenario cites resources.ErrOnDemandNeedsDelta (the one place for that rule).
func (sc *Scenario) CheckMode(mode protocol.Mode) error {
	if err := sc.OnDemand.CheckMode(mode == protocol.SotW); err != nil {
		return &NotApplicableError{Scenario: sc.Name, Where: "mode " + mode.String(), Reason: err}
	}
	if len(sc.Modes) > 0 && !slices.Contains(sc.Modes, mode) {
		return &NotApplicableError{Scenario: sc.Name, Where: "mode " + mode.String(),
			Reason: fmt.Errorf("it runs in %s only (modes:)", joinModes(sc.Modes))}
	}
	return nil
}

// joinModes lists modes the way a scenario file writes them: "sotw, delta".
func joinModes(modes []protocol.Mode) string {
	names := make([]string, len(modes))
	for i, m := range modes {
		names[i] = m.String()
	}
	return strings.Join(names, ", ")
}

// Behaviour is how a backend treats its answers and connections (the inventory
// backend's Behaviour): Delay holds each answer, ConnectionClose answers with
// "Connection: close" (GOAWAY in HTTP/2), IdleTimeout closes idle connections.
type Behaviour struct {
	Delay           time.Duration
	ConnectionClose bool
	IdleTimeout     time.Duration
	// HealthDelay holds the backend's answers to its health path (/quote/health) this
	// long: an active health check's first round waits for it.
	HealthDelay time.Duration
}

// MaxBackendDelay bounds a backend's Delay (the inventory's own bound).
const MaxBackendDelay = 30 * time.Second

// LoadSpec is a scenario's steady load: Rate requests per second over Connections
// connections, HTTP/1.1 keep-alive or HTTP/2 (Protocol "http1" or "http2"), to Path
// (the first step's first request path when empty). Its bounds are the load
// generator's, checked when a run starts (lab scenarios FILE checks them too).
type LoadSpec struct {
	Rate        int
	Connections int
	Protocol    string
	Path        string
	Line        int
}

// Action is what a step does.
type Action string

const (
	// Publish applies a change (upserts and deletes) to the desired state and publishes it.
	Publish Action = "publish"
	// RestartEnvoy stops Envoy cleanly and starts a new process with the same bootstrap.
	RestartEnvoy Action = "restart-envoy"
	// KillEnvoy ends Envoy with SIGKILL and starts a new process.
	KillEnvoy Action = "kill-envoy"
	// RestartControlPlane stops the xDS server while Envoy keeps running, keeps it down for
	// Down, then starts a new server with the same desired state, or with Changes applied.
	RestartControlPlane Action = "restart-control-plane"
	// Wait does nothing for a duration (traffic windows keep probing).
	Wait Action = "wait"
)

// Actions lists every action, in the order the format documents them.
var Actions = []Action{Publish, RestartEnvoy, KillEnvoy, RestartControlPlane, Wait}

// Change is a publish: resource ids to upsert and ids whose resources to delete.
type Change struct {
	// Version is the label to publish under (the scenario's running counter when empty).
	Version string
	Upsert  []string
	Delete  []string
}

// Step is one scenario step.
type Step struct {
	Name string
	// Checkpoint is the evidence file's name, without .json (Name when not given).
	Checkpoint string
	// Proves says in one line what the step proves.
	Proves string
	Action Action
	// Change is the publish of a Publish step. Burst, instead, is several changes
	// published back to back, BurstEvery apart, without waiting for the client between
	// them (rapid publishes: what each protocol and cache sends of the superseded ones).
	Change     Change
	Burst      []Change
	BurstEvery time.Duration
	// Down is how long a RestartControlPlane step keeps the server down; Duration is a
	// Wait step's length.
	Down, Duration time.Duration
	// Changes are published, in order, to the restarted server before Envoy may
	// reconnect (RestartControlPlane); HoldEnvoy freezes Envoy until they are all in.
	Changes   []Change
	HoldEnvoy bool
	Expect    Expect
	// Line is where the step starts in its file.
	Line int
}

// Filter limits an expectation to one mode, one cache and/or one data plane ("" matches
// any).
type Filter struct {
	Mode  protocol.Mode // "sotw" or "delta"
	Cache string        // "snapshot" or "linear"
	// Client is "envoy" for what only real Envoy shows (its timers, such as
	// initial_fetch_timeout, which the simulated client does not model), or "simulated".
	Client string
	// SotWVersions is "uniform" or "per-type": the SotW version strategy in force (what a
	// SnapshotCache re-sends depends on it). It matches SotW runs only.
	SotWVersions string
}

// Target is the run an expectation is checked in.
type Target struct {
	Mode          protocol.Mode
	Cache, Client string
	// SotWVersions is the SotW version strategy in force ("" in delta).
	SotWVersions string
}

// Applies reports whether the expectation holds in this run.
func (f Filter) Applies(t Target) bool {
	return (f.Mode == "" || f.Mode == t.Mode) && (f.Cache == "" || f.Cache == t.Cache) &&
		(f.Client == "" || f.Client == t.Client) && (f.SotWVersions == "" || f.SotWVersions == t.SotWVersions)
}

// Expect is what must hold after a step; each item is checked from evidence.
type Expect struct {
	// Accepted (default true for publish and restarts): some open stream accepted every
	// resource of the published state, except types with an expected NACK.
	Accepted *bool
	Nacks    []NackExpect
	Requests []RequestExpect
	Window   *WindowExpect
	Traffic  *TrafficExpect
	Versions []VersionExpect
	Envoy    []EnvoyStateExpect
	Stats    []StatExpect
	Sent     []SentExpect
}

// NackExpect: the client NACKs a response of Type during the step.
type NackExpect struct {
	Filter
	Type resources.Type
}

// Request is one request sent through the data plane.
type Request struct {
	// Path includes the query ("/quote?sku=paper").
	Path    string
	Headers map[string]string
	// Host is the request's Host (:authority); "" sends the listener's address. On-demand
	// VHDS subscribes by it ("<route>/<Host>").
	Host string
	// TLS sends the request over TLS to the listener, trusting the run's CA, and
	// records which certificate the handshake presented (Envoy only).
	TLS bool
	// Held sends it on the run's one kept-alive connection, opened by its first use and
	// held across steps, instead of a fresh one: what a kept-alive connection keeps.
	Held bool
}

// RequestExpect: requests are sent, each with a fresh request ID, until one gets this
// answer or the step's deadline passes.
type RequestExpect struct {
	Filter
	Request
	Status int
	// Backend must answer (by body and by its own log); "" when none may.
	Backend string
	// Flags is Envoy's response flag (e.g. "NC"); "" when none is expected. For the grpc
	// client, which has no flags, it stands for its class: NC, NR config failure; UH, UF
	// upstream failure (experiments/runner flagHolds).
	Flags string
	// CertSerial and CertCN are the serial (decimal) and common name of the certificate
	// the TLS handshake must present ("" for any).
	CertSerial string
	CertCN     string
	// Handshake is ok, reset, refused or failed ("" for any): whether the TLS handshake
	// completed, the listener closed the connection during it (a listener without its
	// certificate), the port was not listening, or it failed otherwise.
	Handshake string
	// ConnClose, when set, is whether the answer on the held connection (conn: held)
	// must carry Connection: close: what an HTTP/1 connection gets from a draining
	// listener or filter chain (Envoy's conn_manager_impl.cc, encodeHeaders).
	ConnClose *bool
	Line      int
}

// Handshake outcomes (RequestExpect.Handshake, client Observation.Handshake).
const (
	HandshakeOK    = "ok"
	HandshakeReset = "reset"
	// HandshakeRefused: no TCP connection at all (the port is not listened on).
	HandshakeRefused = "refused"
	// HandshakeFailed: any other failure (e.g. a certificate the run's CA did not sign).
	HandshakeFailed = "failed"
)

// handshakes are the outcomes an expectation can name.
var handshakes = []string{HandshakeOK, HandshakeReset, HandshakeRefused, HandshakeFailed}

// SentExpect: during the step the control plane sent exactly these types (by xds.log's
// send events), in the runs the filter selects. It is how a scenario shows what each
// protocol and cache re-sends for one change.
type SentExpect struct {
	Filter
	Types []resources.Type
	Line  int
}

// WindowExpect: probes are sent every Every for the whole step; at most MaxFailures of
// them (at least MinFailures) may fail, and every failure must carry one of Flags when
// Flags is given. This is how a 503 NC window is measured.
type WindowExpect struct {
	Filter
	Request
	Every       time.Duration
	MaxFailures int
	MinFailures int
	Flags       []string
	Line        int
}

// TrafficExpect is checked against the step's share of the steady load (every request
// sent since the last step's count): at most MaxFailures (at least MinFailures) failed;
// every failure is one of Failures ("503 NC", "0 refused") when given; every success was
// answered by one of Backends when given; and the step's last answer came from EndsOn
// when given (the change reached the traffic).
type TrafficExpect struct {
	Filter
	// For is how long the step lasts at least, so that its share of the load is more
	// than the few requests of a fast step (DefaultTrafficFor when not given).
	For         time.Duration
	MaxFailures int
	MinFailures int
	Failures    []string
	Backends    []string
	EndsOn      string
	Line        int
}

// Bounds of a traffic expectation's For.
const (
	DefaultTrafficFor = time.Second
	MaxTrafficFor     = 5 * time.Minute
)

// VersionExpect: the version the client accepted for one resource moves (or stays) across
// the step, by xds.log.
type VersionExpect struct {
	Filter
	Type  resources.Type
	Name  string
	Moves bool
	Line  int
}

// Envoy resource states in the config dump.
const (
	StateActive   = "active"
	StateWarming  = "warming"
	StateAbsent   = "absent"
	StateDraining = "draining"
)

// EnvoyStateExpect: Envoy's config dump shows the resource in State (polled until the
// step's deadline). Clusters and listeners can be active, warming, absent (listeners also
// draining); route configurations and assignments active or absent.
type EnvoyStateExpect struct {
	Filter
	Type  resources.Type
	Name  string
	State string
	Line  int
}

// StatExpect: an Envoy stat, or its rise over the step (Delta), compares to a number.
// With Per100 the rise is counted per 100 of that other stat's rise over the step (the
// connections opened per 100 requests): a rate holds however long a busy machine makes
// the step, where a count grows with it.
type StatExpect struct {
	Filter
	Name   string
	Delta  bool
	Per100 string
	Op     string // one of ==, >=, <=, >, <
	Value  int64
	Line   int
}

// Holds compares got to the expectation.
func (s StatExpect) Holds(got int64) bool {
	switch s.Op {
	case "==":
		return got == s.Value
	case ">=":
		return got >= s.Value
	case "<=":
		return got <= s.Value
	case ">":
		return got > s.Value
	case "<":
		return got < s.Value
	}
	return false
}

// Names lists the step names.
func Names(steps []Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.Name
	}
	return out
}

// UsesHeldConn reports whether a request goes on the run's one kept-alive connection
// (conn: held): real Envoy only.
func (sc *Scenario) UsesHeldConn() bool {
	for _, st := range sc.Steps {
		for _, q := range st.Expect.Requests {
			if q.Held {
				return true
			}
		}
	}
	return false
}

// UsesTLS reports whether the scenario has a TLS side: a secret (SDS) resource or a
// request sent over TLS.
func (sc *Scenario) UsesTLS() bool {
	for _, r := range sc.Resources {
		for _, it := range r.Items {
			if it.Type == resources.SDS {
				return true
			}
		}
	}
	for _, st := range sc.Steps {
		for _, q := range st.Expect.Requests {
			if q.TLS {
				return true
			}
		}
		if w := st.Expect.Window; w != nil && w.TLS {
			return true
		}
	}
	return false
}
