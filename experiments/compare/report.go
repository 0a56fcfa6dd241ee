package compare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/clientview"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// Report is the comparison of two runs. It is what the JSON format prints, so its field
// names are a stable interface: add fields, never rename them.
type Report struct {
	// Runs are A and B, in command-line order.
	Runs [2]RunHeader `json:"runs"`
	// SharedSteps are the steps present in both runs, in run A's order; every other
	// section covers only these (or only Step when it is set).
	SharedSteps []string `json:"shared_steps"`
	// Step is the step selected with --step ("" for all).
	Step string `json:"step,omitempty"`
	// ProtocolDifferences are what differs between SotW and delta by the protocol, in
	// these runs (none when A and B speak the same protocol); ConfigDifferences what this
	// configuration adds, each naming its option or component (differences.go).
	ProtocolDifferences []ProtocolDifference `json:"protocol_differences"`
	ConfigDifferences   []ConfigDifference   `json:"configuration_differences"`
	// Scale is the scale sweep shown beside the runs (Options.Scale); absent without one.
	Scale *Scale `json:"scale,omitempty"`
	// Headline says in one paragraph what differed most between A and B, computed from
	// the totals, and whether that is the protocol or an implementation.
	Headline Headline `json:"headline"`
	// Rows has one row per compared step.
	Rows []Row `json:"rows"`
	// Versions has one checkpoint (end of step) per compared step.
	Versions []Checkpoint `json:"versions"`
	// Findings are computed from the figures; none is hand-written.
	Findings []Finding `json:"findings"`
	// Diagrams are the parsed sequence diagrams: for each compared step, A then B, with
	// every message (renderers cap long steps, this list never does).
	Diagrams []Diagram `json:"diagrams"`
	// Total sums the compared steps per run.
	Total [2]Figures `json:"total"`
	// Clients is where the two runs' clients differ (clients.go); absent when both runs
	// have the same client or either client is unknown.
	Clients *Clients `json:"clients,omitempty"`
}

// RunHeader says where a run comes from and which options it used.
type RunHeader struct {
	Label string        `json:"label"` // "A" or "B"
	Path  string        `json:"path"`
	Mode  protocol.Mode `json:"mode"`
	// OptionsKnown is false when the run has no run.json: the mode comes from the log
	// and the options below are empty.
	OptionsKnown bool   `json:"options_known"`
	Client       string `json:"client,omitempty"` // "envoy", "grpc" or "simulated"
	EnvoyVersion string `json:"envoy_version,omitempty"`
	SotwVersions string `json:"sotw_versions,omitempty"`
	NackPolicy   string `json:"nack_policy,omitempty"`
	Cache        string `json:"cache,omitempty"`
	Started      string `json:"started,omitempty"`
	// EnvoyResult is envoy.result: PASS, FAIL: reason, NOT_RUN ("" when absent).
	EnvoyResult string `json:"envoy_result,omitempty"`
	Events      int    `json:"events"`
	// SkippedLines counts unreadable log lines; FirstSkip describes the first.
	SkippedLines int    `json:"skipped_lines,omitempty"`
	FirstSkip    string `json:"first_skip,omitempty"`
	// Steps are all the run's steps in log order; OnlyHere those absent from the other run.
	Steps    []string `json:"steps"`
	OnlyHere []string `json:"only_here,omitempty"`
}

// Row is one step: a column group per run.
type Row struct {
	Step string     `json:"step"`
	Runs [2]Figures `json:"runs"`
}

// Figures are one run's figures for one step (or a total), from analysis.Summarize.
type Figures struct {
	// Responses counts sends per type (xdslog.Types; absent types sent nothing).
	Responses map[string]int `json:"responses"`
	// Counts are the step's total counts, as summary.json has them (analysis.Counts).
	analysis.Counts
	NackRate      float64 `json:"nack_rate_per_s,omitempty"`
	Bytes         int     `json:"bytes"`
	Unmatched     int     `json:"unmatched,omitempty"`
	Dropped       int     `json:"dropped,omitempty"`
	StreamsOpened int     `json:"streams_opened,omitempty"`
	// PublishToAckMS is the median from the step's publish (or start) to each ACK.
	PublishToAckMS *float64 `json:"publish_to_ack_ms_median,omitempty"`
	// PublishToCorrectMS is from the publish to the first correct data-plane request.
	PublishToCorrectMS *float64 `json:"publish_to_first_correct_request_ms,omitempty"`
	// DataPlane is the step's last data-plane observation.
	DataPlane *DataPlaneResult `json:"data_plane,omitempty"`
	// Probes are all the step's data-plane probes, weighted, with the failures' window:
	// analysis.Probes as summary.json has them, except that Simulated holds when any of
	// them is not known to be Envoy's (isSimulated: another client, or none named in a run
	// whose client is not Envoy). Absent when the step sent none (and in totals).
	Probes *analysis.Probes `json:"probes,omitempty"`
	// Traffic is the step's steady load (lab run --load) as analysis.Traffic has it: the
	// runner's counts, whether the load fell behind, its timeline and the step's
	// publishes, ACKs and NACKs placed on it. Absent when the step has no traffic event
	// (and in totals).
	Traffic *analysis.Traffic `json:"traffic,omitempty"`
	// NotFound counts bodiless "does not exist" answers sent (not in Resources).
	NotFound int `json:"not_found,omitempty"`
	// OnDemand is the step's on-demand subscribes and each fetch's timeline, as
	// analysis.OnDemand has it. Absent when the step has none (and in totals).
	OnDemand *analysis.OnDemand `json:"on_demand,omitempty"`
}

// DataPlaneResult is one data-plane request's outcome.
type DataPlaneResult struct {
	RequestID string `json:"request_id"`
	Status    int    `json:"status"`
	Backend   string `json:"backend,omitempty"`
	Flags     string `json:"flags,omitempty"`
	Upstream  string `json:"upstream,omitempty"`
	Client    string `json:"client"` // "envoy", "simulated" or ""
	// Simulated is true when no proxy forwarded anything: the answer was computed by the
	// simulated client. Renderers always say so.
	Simulated bool   `json:"simulated"`
	Expected  string `json:"expected,omitempty"`
	Correct   bool   `json:"correct"`
	// Text is the rendered cell, e.g. "200 v2 envoy" or "200 v1 SIMULATED".
	Text string `json:"text"`
}

// Checkpoint is the per-resource versions both runs' clients ran at the end of a step.
type Checkpoint struct {
	Step string        `json:"step"`
	Runs [2]VersionSet `json:"runs"`
}

// VersionSet is one run's versions at a checkpoint of every resource the compared runs'
// logs name (versionResources: published, sent or held), the same list in every run.
type VersionSet struct {
	Resources []ResourceVersion `json:"resources"`
	// Moved counts the resources whose version changed since the run's previous
	// checkpoint (absent counts as a version).
	Moved int `json:"moved"`
	// ClientView is the runner's check of the client's own view (Envoy's config dump,
	// grpc-go's CSDS) against xds.log's model at the checkpoint; absent when the run has
	// none (the simulated client, an older run).
	ClientView *analysis.ClientView `json:"client_view,omitempty"`
}

// ResourceVersion is one resource's accepted version ("" when the client runs none).
// Delta versions are full 64-hex content hashes here; text renderers abbreviate them.
type ResourceVersion struct {
	Type    string `json:"type"`
	Name    string `json:"name"`
	Version string `json:"version"`
	Moved   bool   `json:"moved"`
}

// Finding is one statement computed from the figures, naming its step and numbers.
type Finding struct {
	Step string `json:"step"` // "" for the whole comparison
	// Kind groups findings: redundant, nack, removal, reconnect, stale, versions,
	// unanswered, dataplane, anomaly, total.
	Kind string `json:"kind"`
	// Text may mark resource names as code spans with backticks.
	Text string `json:"text"`
	// Attribution is "protocol" when the xDS protocol document says any conforming server
	// and client would show the same, "implementation" when it is a choice of
	// go-control-plane, the workbench or the client, and "unattributed" when nothing the
	// report knows explains it (never a label by default).
	Attribution string `json:"attribution"`
	// Source is where that is written (package cite): for the protocol the section of
	// the xDS protocol document (Envoy's docs/root/api-docs/xds_protocol.rst), for an
	// implementation the component, its file and function, and what it does; for an
	// unattributed finding why it is not attributed.
	Source string `json:"source"`
	// ObservedWith says under which protocols, caches and clients a protocol finding was
	// observed ("A sotw, snapshot cache, Envoy; B delta, linear cache, Envoy").
	ObservedWith string `json:"observed_with,omitempty"`
	// verdict is the attribution with its sources, per run (see attribution).
	verdict attribution
	// facets are what a matrix of runs compares of this finding (findings.go).
	facets []facet
}

// Headline is the report's opening paragraph: the total (bytes, responses or NACKs)
// whose A/B ratio is largest, the step that makes most of the difference, and the
// attribution of the finding that explains that step.
type Headline struct {
	Text string `json:"text"`
	// Metric is "bytes", "responses" or "nacks" ("" when no total differs).
	Metric string `json:"metric,omitempty"`
	// Values are A's and B's totals of Metric.
	Values [2]int `json:"values"`
	// Ratio is the larger total over the smaller; absent when the smaller is 0.
	Ratio       *float64 `json:"ratio,omitempty"`
	Step        string   `json:"step,omitempty"`
	Attribution string   `json:"attribution,omitempty"`
	Source      string   `json:"source,omitempty"`
}

// Options select what to compare.
type Options struct {
	// Step restricts the report to one shared step ("" for all), by its shown name:
	// NoStep for the events recorded before the first step.
	Step string
	// Scale is a scale sweep to show beside the runs (LoadScale); nil for none.
	Scale *Scale
}

// Tracked are the teaching scenario's resources, one per type: what a NACK's client view
// looks up (clients_evidence.go). The versions table covers every resource the runs'
// logs name instead (versionResources).
var Tracked = []struct{ Type, Name string }{
	{"LDS", resources.ListenerName},
	{"RDS", resources.RouteName},
	{"CDS", resources.ClusterName},
	{"EDS", resources.ClusterName},
}

// Compare computes the report of two runs.
func Compare(a, b *Run, opt Options) (*Report, error) {
	runs := [2]*Run{a, b}
	sa, sb := runSteps(a), runSteps(b)
	rep := &Report{Step: opt.Step, SharedSteps: []string{}, Rows: []Row{}, Versions: []Checkpoint{}, Findings: []Finding{}, Diagrams: []Diagram{}}
	inB := set(sb)
	for _, s := range sa {
		if inB[s] {
			rep.SharedSteps = append(rep.SharedSteps, s)
		}
	}
	for i, r := range runs {
		rep.Runs[i] = header(r, runSteps(r), runSteps(runs[1-i]))
	}
	steps, err := selectSteps(rep.SharedSteps, opt.Step, "both runs")
	if err != nil {
		return nil, err
	}
	cols := runColumns(runs[:], steps)
	for i, s := range steps {
		rep.Rows = append(rep.Rows, Row{Step: s, Runs: [2]Figures(cols.figures[i])})
		rep.Versions = append(rep.Versions, Checkpoint{Step: s, Runs: [2]VersionSet(cols.versions[i])})
	}
	rep.Total = [2]Figures(cols.total)
	rep.Diagrams = append(rep.Diagrams, cols.diagrams...)
	rep.Findings = findings(runs, rep, steps, [2]map[string]*analysis.Step{cols.summary[0], cols.summary[1]})
	rep.Clients = compareClients(runs, steps)
	rep.Headline = headline(runs, rep)
	rep.Scale = opt.Scale
	rep.ProtocolDifferences = protocolDifferences(twoRunPair(runs, steps), opt.Scale)
	var sf []sourcedFinding
	for _, f := range rep.Findings {
		sf = append(sf, sourcedFinding{step: f.Step, attr: f.Attribution, srcs: f.verdict.srcs})
	}
	rep.ConfigDifferences = configurationDifferences(sf)
	return rep, nil
}

// twoRunPair is A and B as a SotW/delta pair, or none when they speak one protocol.
func twoRunPair(runs [2]*Run, steps []string) []diffPair {
	for i, r := range runs {
		if r.Mode == protocol.SotW && runs[1-i].Mode == protocol.Delta {
			return []diffPair{{name: runs[0].Label + " vs " + runs[1].Label, sotw: r, delta: runs[1-i], steps: steps}}
		}
	}
	return nil
}

// runSteps are the names of a run's steps, in log order.
func runSteps(r *Run) []string {
	out := make([]string, len(r.Summary.Steps))
	for i, s := range r.Summary.Steps {
		out[i] = s.Name
	}
	return out
}

// columns are what a two-run report and a matrix show of each run per compared step.
type columns struct {
	// figures and versions are indexed by step, then run; diagrams are each step's, a
	// diagram per run; total is each run's sum over the steps.
	figures  [][]Figures
	versions [][]VersionSet
	diagrams []Diagram
	total    []Figures
	// summary is each run's summary steps by name.
	summary []map[string]*analysis.Step
}

// runColumns computes the columns of runs for steps.
func runColumns(runs []*Run, steps []string) columns {
	n := len(runs)
	c := columns{total: make([]Figures, n), summary: make([]map[string]*analysis.Step, n)}
	// Index once: a hostile log can have thousands of steps, and per-step scans of every
	// event would make the comparison quadratic.
	versions := make([]map[string]VersionSet, n)
	byStep := make([]map[string][]xdslog.Event, n)
	client := make([]string, n)
	tracked := versionResources(runs)
	for i, r := range runs {
		versions[i] = checkpoints(r, tracked)
		byStep[i], c.summary[i], client[i] = map[string][]xdslog.Event{}, map[string]*analysis.Step{}, clientName(r)
		for _, e := range r.Events {
			byStep[i][e.Step] = append(byStep[i][e.Step], e)
		}
		for _, st := range r.Summary.Steps {
			c.summary[i][st.Name] = st
		}
	}
	sums := make([]analysis.Step, n)
	for _, s := range steps {
		figs, cps := make([]Figures, n), make([]VersionSet, n)
		for i, r := range runs {
			figs[i] = figures(c.summary[i][s], r)
			addCounts(&sums[i], c.summary[i][s])
			cps[i] = versions[i][s]
			c.diagrams = append(c.diagrams, buildDiagram(r, s, client[i], byStep[i][s]))
		}
		c.figures = append(c.figures, figs)
		c.versions = append(c.versions, cps)
	}
	for i, r := range runs {
		c.total[i] = figures(&sums[i], r)
	}
	return c
}

// addCounts adds a step's counts to sum, a run's total over the compared steps (nil st
// adds none): its types' and its total's by analysis's rule (TypeFigures.Add), and the
// streams it opened and the sends they dropped. Nothing else is summed: a total has no
// median, rate or data plane.
func addCounts(sum, st *analysis.Step) {
	if st == nil {
		return
	}
	if sum.Types == nil {
		sum.Types = map[string]*analysis.TypeFigures{}
	}
	for t, tf := range st.Types {
		if sum.Types[t] == nil {
			sum.Types[t] = &analysis.TypeFigures{}
		}
		sum.Types[t].Add(tf)
	}
	sum.Total.Add(&st.Total)
	sum.Dropped += st.Dropped
	sum.StreamsUp += st.StreamsUp
}

func header(r *Run, steps, other []string) RunHeader {
	h := RunHeader{Label: r.Label, Path: r.Path, Mode: r.Mode, EnvoyResult: r.EnvoyResult,
		Events: len(r.Events), SkippedLines: r.Stats.Skipped, FirstSkip: r.Stats.FirstSkip, Steps: steps}
	if m := r.Meta; m != nil {
		h.OptionsKnown = true
		h.Client, h.EnvoyVersion, h.SotwVersions, h.NackPolicy, h.Started = m.Client, m.EnvoyVersion, m.SotwVersions, m.NackPolicy, m.Started
		h.Cache = m.Cache
	}
	inOther := set(other)
	for _, s := range steps {
		if !inOther[s] {
			h.OnlyHere = append(h.OnlyHere, s)
		}
	}
	return h
}

func figures(st *analysis.Step, r *Run) Figures {
	f := Figures{Responses: map[string]int{}}
	if st == nil {
		return f
	}
	for t, tf := range st.Types {
		if tf.Responses > 0 {
			f.Responses[t] = tf.Responses
		}
	}
	t := st.Total
	f.Counts, f.Bytes, f.Unmatched = t.Counts, t.Bytes, t.Unmatched
	f.NackRate, f.Dropped, f.StreamsOpened = st.NackRate, st.Dropped, st.StreamsUp
	f.PublishToAckMS, f.PublishToCorrectMS = st.PublishToAckMS, st.PublishToCorrectMS
	if dp := st.DataPlane; dp != nil {
		res := &DataPlaneResult{RequestID: dp.RequestID, Status: dp.Status, Backend: dp.Backend, Flags: dp.Flags,
			Upstream: dp.Upstream, Client: dp.Client, Expected: dp.Expected, Correct: dp.Correct}
		res.Simulated = isSimulated(dp.Client, r)
		res.Text = dataPlaneText(res, r)
		f.DataPlane = res
	}
	if st.Probes != nil {
		p := *st.Probes
		// The last observation's rule, for every client that answered a probe: only
		// a real client's answers are real, and one of unknown origin is not (isSimulated).
		for c := range p.Clients {
			if c == analysis.UnnamedClient {
				c = ""
			}
			p.Simulated = p.Simulated || isSimulated(c, r)
		}
		f.Probes = &p
	}
	f.Traffic = st.Traffic
	f.NotFound, f.OnDemand = t.NotFound, st.OnDemand
	return f
}

// isSimulated decides whether a data-plane answer came from the simulated client: the
// event says so, or it names no client and the run's client is simulated. An answer of
// unknown origin is not called a real client's.
func isSimulated(client string, r *Run) bool {
	if client == "" && r.Meta != nil {
		client = r.Meta.Client
	}
	return !RealClient(client)
}

// RealClient reports whether client is one of the data planes that forward real requests (Envoy, grpc-go's channel).
func RealClient(client string) bool {
	return client == clientview.ClientEnvoy || client == clientview.ClientGRPC
}

// answeredBy is the label of a real answer: the client that gave it.
func answeredBy(client string, r *Run) string {
	if client == "" && r.Meta != nil {
		client = r.Meta.Client
	}
	return client
}

func dataPlaneOf(e xdslog.Event) *DataPlaneResult {
	return &DataPlaneResult{RequestID: e.RequestID, Status: e.Status, Backend: e.Backend, Flags: e.Flags,
		Upstream: e.Upstream, Client: e.Client, Expected: e.Expected, Correct: e.Correct != nil && *e.Correct}
}

// dataPlaneText renders a result as "200 v2 envoy", "503 NC envoy" or "200 v1 SIMULATED"
// (a simulated answer is always labelled so), with "(want X)" when it was wrong.
func dataPlaneText(d *DataPlaneResult, r *Run) string {
	var parts []string
	if d.Status == 0 {
		parts = append(parts, "no-answer")
	} else {
		parts = append(parts, fmt.Sprint(d.Status))
	}
	switch {
	case d.Backend != "":
		parts = append(parts, d.Backend)
	case d.Flags != "" && d.Flags != "-":
		parts = append(parts, d.Flags)
	}
	switch {
	case isSimulated(d.Client, r):
		parts = append(parts, "SIMULATED")
	default:
		parts = append(parts, answeredBy(d.Client, r))
	}
	s := strings.Join(parts, " ")
	if !d.Correct && d.Expected != "" {
		s += " (want " + d.Expected + ")"
	}
	return s
}

// checkpoints returns, per step of the run, the versions of the tracked resources at
// the end of that step and which moved since the run's previous step.
func checkpoints(r *Run, tracked []resourceKey) map[string]VersionSet {
	out := map[string]VersionSet{}
	prev := make([]string, len(tracked)) // each resource's version at the previous step
	for _, st := range r.Summary.Steps {
		vs := VersionSet{Resources: make([]ResourceVersion, 0, len(tracked))}
		for i, t := range tracked {
			v := st.Versions[t.Type][t.Name]
			moved := v != prev[i]
			prev[i] = v
			if moved {
				vs.Moved++
			}
			vs.Resources = append(vs.Resources, ResourceVersion{Type: t.Type, Name: t.Name, Version: v, Moved: moved})
		}
		vs.ClientView = st.ClientView
		out[st.Name] = vs
	}
	return out
}

func set(s []string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, x := range s {
		m[x] = true
	}
	return m
}

// NoStep is how every format shows the unnamed step: the events recorded before the
// first step was set (a lab serve log's first pushes). Options.Step accepts it.
const NoStep = words.NoStep

// selectSteps is the steps a report shows: every shared step, or only the one step
// asked for, given by its shown name (NoStep for the unnamed one); in says where it must
// be ("both runs") when it is not shared.
func selectSteps(shared []string, step, in string) ([]string, error) {
	if step == "" {
		return shared, nil
	}
	// A step really named "(no step)" is itself; otherwise the label is the unnamed one.
	want := step
	if step == NoStep && !slices.Contains(shared, step) {
		want = ""
	}
	if !slices.Contains(shared, want) {
		return nil, fmt.Errorf("step %q is not in %s (shared steps: %s)", step, in, words.ListOrNone(words.Steps(shared)))
	}
	return []string{want}, nil
}
