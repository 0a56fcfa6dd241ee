// Package analysis turns an xds.log into figures: per scenario step and per type, what was
// sent, what was redundant or removed, how the client answered, how long it took, what
// the data plane showed, and the steady load it carried (lab run --load). summary.json
// and `lab compare` are both computed here, so the two can never disagree.
package analysis

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/stats"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// Types in display order (xdslog.Types).
var Types = xdslog.Types

// TypeFigures are one type's figures in one step.
type TypeFigures struct {
	Responses int `json:"responses"`
	Counts
	Bytes     int `json:"bytes"`
	Unmatched int `json:"unmatched,omitempty"`
	// Stale counts SotW requests whose nonce was not the latest: dropped by the library.
	Stale int `json:"stale,omitempty"`
	// NotFound counts bodiless "does not exist" answers sent (xdslog.Resource.NotFound):
	// not content, so not in Resources and never Redundant.
	NotFound int `json:"not_found,omitempty"`
	// OnDemand counts on-demand subscribe requests (xdslog.RequestOnDemand).
	OnDemand int `json:"on_demand,omitempty"`
}

// Counts are what was sent and what came back, counted one way wherever they are shown:
// summary.json per type and in total (TypeFigures), and lab compare's figures, which
// embed them. Embedded, their fields stay where they were in the JSON.
type Counts struct {
	Resources int `json:"resources"`
	// Redundant counts resources the client already ran with exactly this content.
	Redundant int `json:"redundant"`
	// RedundantBytes estimates the bytes of redundant resources (their share of each send).
	RedundantBytes int `json:"redundant_bytes"`
	// RemovedExplicit counts names in delta removed_resources.
	RemovedExplicit int `json:"removed_explicit"`
	// RemovedByAbsence counts names that a SotW LDS/CDS response left out compared with
	// the previous response on the same stream.
	RemovedByAbsence int `json:"removed_by_absence"`
	Acks             int `json:"acks"`
	Nacks            int `json:"nacks"`
	// RejectedResends counts sends whose content had already been rejected on that stream.
	RejectedResends int `json:"rejected_resends"`
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Resources += o.Resources
	c.Redundant += o.Redundant
	c.RedundantBytes += o.RedundantBytes
	c.RemovedExplicit += o.RemovedExplicit
	c.RemovedByAbsence += o.RemovedByAbsence
	c.Acks += o.Acks
	c.Nacks += o.Nacks
	c.RejectedResends += o.RejectedResends
}

// DataPlane is the last data-plane observation of a step: its last request probe (the
// expectation's), or in a step that sent none its last window or outage probe.
type DataPlane struct {
	Client    string `json:"client"`
	RequestID string `json:"request_id"`
	Status    int    `json:"status"`
	Backend   string `json:"backend,omitempty"`
	Flags     string `json:"flags,omitempty"`
	Upstream  string `json:"upstream,omitempty"`
	Expected  string `json:"expected,omitempty"`
	Correct   bool   `json:"correct"`
}

// Step is one scenario step's figures.
type Step struct {
	Name      string                  `json:"name"`
	Version   string                  `json:"version,omitempty"` // label published in the step
	Changed   []string                `json:"changed,omitempty"`
	Types     map[string]*TypeFigures `json:"types"`
	Total     TypeFigures             `json:"total"`
	StreamsUp int                     `json:"streams_opened"`
	// Dropped counts sends never answered on streams that closed in this step.
	Dropped int `json:"dropped"`
	// PublishToAckMS is the median time from the step's publish (or start) to each ACK.
	PublishToAckMS *float64 `json:"publish_to_ack_ms_median,omitempty"`
	// PublishToCorrectMS is the time from the publish to the first data-plane request
	// that got the expected answer.
	PublishToCorrectMS *float64   `json:"publish_to_first_correct_request_ms,omitempty"`
	DataPlane          *DataPlane `json:"data_plane,omitempty"`
	// Probes are all of the step's data-plane probes, weighted, with the failures' window
	// (probes.go); nil when the step sent none.
	Probes *Probes `json:"data_plane_probes,omitempty"`
	// Traffic is the step's steady load (lab run --load), with its publishes, ACKs and
	// NACKs placed on its timeline (traffic.go); nil when the step has no traffic event.
	Traffic *Traffic `json:"traffic,omitempty"`
	// Versions is what the client held at the end of the step, per type and name, as the
	// log says (xdslog.Model.Held: the latest stream's ACKed content, seeded on a resume,
	// less what it unsubscribed from).
	Versions map[string]map[string]string `json:"versions"`
	// NackErrors are the distinct NACK messages of the step.
	NackErrors []string `json:"nack_errors,omitempty"`
	// NackRate is NACKs per second over the step's NACK window (storm rate).
	NackRate float64 `json:"nack_rate_per_s,omitempty"`
	// RemovedNames lists, per type, the names sent in delta removed_resources;
	// AbsentNames the names a SotW LDS/CDS response left out that the previous response
	// on the stream had (a removal by absence).
	RemovedNames map[string][]string `json:"removed_names,omitempty"`
	AbsentNames  map[string][]string `json:"absent_names,omitempty"`
	// Reconnect describes the streams the step opened after the log's first stream.
	Reconnect *Reconnect `json:"reconnect,omitempty"`
	// OnDemand is the step's on-demand subscriptions and each fetch's timeline
	// (ondemand.go); nil when the step has none.
	OnDemand *OnDemand `json:"on_demand,omitempty"`
	// ClientView is the runner's cross-check of the client's own view against this log's
	// model at the step's checkpoint (its last client_view event); nil when none.
	ClientView *ClientView `json:"client_view,omitempty"`

	start   time.Time
	publish time.Time
	acks    []float64
	// stepTS is the step's first step event, end its latest event time, probes the
	// data-plane tally (probes.go).
	stepTS, end time.Time
	probes      *probeTally
	// traffic is the step's traffic event, checked; marks its publishes, ACKs and NACKs
	// until the timeline places them, marksLeftOut those past maxTrafficMarks (traffic.go).
	traffic      *Traffic
	marks        []markEvent
	marksLeftOut int
	// dpRequest: DataPlane is a request probe's (see EventDataPlane in observeLocked).
	dpRequest bool
	// The NACK window, for the storm rate: count, first and last NACK.
	nackN               int
	nackFirst, nackLast time.Time
	// fetches are the step's on-demand fetches, still being filled in (ondemand.go).
	fetches []*Fetch
}

// nackAt adds n NACKs between first and last to the step's NACK window.
func (st *Step) nackAt(n int, first, last time.Time) {
	if st.nackN == 0 || first.Before(st.nackFirst) {
		st.nackFirst = first
	}
	if last.After(st.nackLast) {
		st.nackLast = last
	}
	st.nackN += n
}

// Reconnect is what happened on the streams a step opened after the log's first one.
type Reconnect struct {
	// Server is the control-plane instance of the new stream when it is a restarted one
	// (higher than any seen before), else 0: the client reconnected.
	Server    int `json:"server,omitempty"`
	Streams   int `json:"streams"`
	Responses int `json:"responses"`
	Resources int `json:"resources"`
	Redundant int `json:"redundant"`
	Bytes     int `json:"bytes"`
	// InitialVersions counts delta initial_resource_versions entries the client sent;
	// Resume lists the SotW version_info values it resumed from.
	InitialVersions int      `json:"initial_versions"`
	Resume          []string `json:"resume,omitempty"`
}

// SendInfo is what the accumulator knows about a send when it counts it (OnSend).
type SendInfo struct {
	// Absent: a SotW LDS/CDS send leaves these out (removal by absence).
	Absent []string
	// OnNewStream: the stream was opened by a reconnect in this step; FirstOfType: it is
	// the first send of its type on the stream.
	OnNewStream, FirstOfType bool
	// TypeChanged: the step's publish changed this type.
	TypeChanged bool
}

// Summary is a whole log's figures.
type Summary struct {
	Mode    protocol.Mode `json:"mode"`
	Events  int           `json:"events"`
	Skipped int           `json:"skipped_lines,omitempty"`
	Steps   []*Step       `json:"steps"`
	Total   TypeFigures   `json:"total"`
}

// Step returns the named step or nil.
func (s *Summary) Step(name string) *Step {
	for _, st := range s.Steps {
		if st.Name == name {
			return st
		}
	}
	return nil
}

type key struct {
	server int
	stream int64
	typ    string
}

// ServerFigures are one control-plane instance's counts, for the runner's checks.
type ServerFigures struct {
	StreamsOpened, StreamsClosed int
	// SentVersions counts sends per version label; SentResources counts sends per
	// TYPE/name; FirstAck is the sent version of the first ACK of each type.
	SentVersions  map[string]int
	SentResources map[string]int
	FirstAck      map[string]string
}

// Accumulator tallies an xds.log one event at a time: live, as the recorder's observer
// (the runner, the bench, `lab serve`'s status), and offline, replaying a log (summary.json,
// `lab compare`). It applies each event to an xdslog.Model (what was sent and answered,
// what the client holds) and counts it; what an event means is decided once, by the
// recorder, and applied once, by the model, so every reader counts the same way. Safe for
// concurrent use; Observe stays quick (it runs under the recorder's lock).
type Accumulator struct {
	mu      sync.Mutex
	model   *xdslog.Model
	sum     Summary
	steps   map[string]*Step
	cur     *Step            // the step of the latest event
	lastSet map[key][]string // SotW LDS/CDS: names of the previous response, for removal by absence
	servers map[int]*ServerFigures
	changed chan struct{}
	// Reconnects: whether a stream was seen yet, the highest server, the streams opened
	// by a reconnect (-> their step), and the types sent on each stream.
	anyStream bool
	maxServer int
	fresh     map[key]string // key.typ unused
	sentOn    map[key]bool
	onSend    func(xdslog.Event, SendInfo)
	noHeld    bool // SkipHeldVersions
	od        *onDemandTally
}

// NewAccumulator returns an empty accumulator.
func NewAccumulator() *Accumulator {
	return &Accumulator{model: xdslog.NewModel(nil), steps: map[string]*Step{}, lastSet: map[key][]string{},
		servers: map[int]*ServerFigures{}, changed: make(chan struct{}), fresh: map[key]string{}, sentOn: map[key]bool{},
		od: newOnDemandTally()}
}

// OnSend calls fn with every send event and what the accumulator knows about it, as it
// counts it (compare annotates diagrams and explains redundancy with it). Set it before
// the first Observe.
func (a *Accumulator) OnSend(fn func(xdslog.Event, SendInfo)) { a.onSend = fn }

// SkipHeldVersions stops the accumulator from keeping, per step, what the client held when
// the step ended (Step's Versions, compare's version table): that is a copy of every
// resource the client holds at each step boundary, O(N) per change at N = 10,000, which
// lab bench does not read. Call it before the first Observe.
func (a *Accumulator) SkipHeldVersions() { a.noHeld = true }

// Summarize computes the figures of a log. Events must be in log order.
func Summarize(events []xdslog.Event) *Summary {
	a := NewAccumulator()
	for _, e := range events {
		a.Observe(e)
	}
	return a.Summary()
}

// Observe counts one event.
func (a *Accumulator) Observe(e xdslog.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.observeLocked(e)
	close(a.changed)
	a.changed = make(chan struct{})
}

// Changed is closed at the next event: wait on it, then read again.
func (a *Accumulator) Changed() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.changed
}

func (a *Accumulator) stepLocked(e xdslog.Event) *Step {
	st, ok := a.steps[e.Step]
	if !ok {
		st = &Step{Name: e.Step, Types: map[string]*TypeFigures{}, Versions: map[string]map[string]string{}, start: e.TS}
		a.steps[e.Step] = st
		a.sum.Steps = append(a.sum.Steps, st)
	}
	if a.cur != nil && a.cur != st && !a.noHeld {
		a.cur.Versions = a.model.Held() // what the client held when the step ended
	}
	a.cur = st
	return st
}

func (st *Step) fig(typ string) *TypeFigures {
	f, ok := st.Types[typ]
	if !ok {
		f = &TypeFigures{}
		st.Types[typ] = f
	}
	return f
}

func (a *Accumulator) server(n int) *ServerFigures {
	s, ok := a.servers[n]
	if !ok {
		s = &ServerFigures{SentVersions: map[string]int{}, SentResources: map[string]int{}, FirstAck: map[string]string{}}
		a.servers[n] = s
	}
	return s
}

// observeLocked counts one event: each kind that needs more than a line or two has its
// own method below.
func (a *Accumulator) observeLocked(e xdslog.Event) {
	a.sum.Events++
	if a.sum.Mode == "" {
		a.sum.Mode = e.Mode
	}
	if e.Event == xdslog.EventSession {
		return // a boundary, not part of any step
	}
	st := a.stepLocked(e)
	if e.TS.After(st.end) {
		st.end = e.TS
	}
	switch e.Event {
	case xdslog.EventStep:
		// The first one: should a label be set again later, the step's start stays.
		if st.stepTS.IsZero() {
			st.stepTS = e.TS
		}
	case xdslog.EventPublish:
		st.Version = e.Version
		st.Changed = e.Changed
		st.publish = e.TS
		st.mark(e)
	case xdslog.EventStreamOpen:
		a.streamOpened(st, e)
	case xdslog.EventRequest:
		a.request(st, e)
	case xdslog.EventStreamClose:
		a.streamClosed(st, e)
	case xdslog.EventSend:
		a.send(st, e)
	case xdslog.EventStorm:
		st.storm(e)
	case xdslog.EventAck:
		a.ack(st, e)
	case xdslog.EventNack:
		st.fig(e.Type).Nacks++
		st.nackAt(1, e.TS, e.TS)
		st.mark(e)
		st.nackError(e.Error)
	case xdslog.EventUnmatched:
		st.fig(e.Type).Unmatched++
	case xdslog.EventStale:
		st.fig(e.Type).Stale++
	case xdslog.EventTraffic:
		st.observeTraffic(e)
	case xdslog.EventClientView:
		st.ClientView = &ClientView{Client: e.Client, Stream: e.Stream, Checked: e.Checked, Findings: e.Findings, Error: e.Error}
	case xdslog.EventDataPlane:
		a.dataPlane(st, e)
	}
	a.model.Observe(e)
}

// streamOpened counts a stream; after the log's first one, it is a reconnect of the step
// (to a restarted control plane when its server is new).
func (a *Accumulator) streamOpened(st *Step, e xdslog.Event) {
	st.StreamsUp++
	a.server(e.Server).StreamsOpened++
	if a.anyStream {
		if st.Reconnect == nil {
			st.Reconnect = &Reconnect{}
		}
		st.Reconnect.Streams++
		if e.Server > a.maxServer {
			st.Reconnect.Server = e.Server
		}
		a.fresh[key{e.Server, e.Stream, ""}] = e.Step
	}
	a.anyStream = true
	a.maxServer = max(a.maxServer, e.Server)
}

// request counts what a reconnected stream's requests brought (initial versions, the
// version it resumes from) and on-demand subscribes.
func (a *Accumulator) request(st *Step, e xdslog.Event) {
	if a.fresh[key{e.Server, e.Stream, ""}] == e.Step && st.Reconnect != nil {
		st.Reconnect.InitialVersions += len(e.InitialVersions)
		if e.Version != "" && e.Kind == xdslog.RequestResume && !slices.Contains(st.Reconnect.Resume, e.Version) {
			st.Reconnect.Resume = append(st.Reconnect.Resume, e.Version)
		}
	}
	if e.Kind == xdslog.RequestOnDemand {
		st.fig(e.Type).OnDemand++
		n, known := a.model.PublishedCount(e.Type)
		a.od.subscribe(st, e, n, known)
	}
}

// streamClosed counts the sends the stream never had answered and forgets its state.
func (a *Accumulator) streamClosed(st *Step, e xdslog.Event) {
	a.server(e.Server).StreamsClosed++
	if e.Dropped != nil && *e.Dropped > 0 {
		st.Dropped += *e.Dropped
	}
	for kk := range a.lastSet {
		if kk.server == e.Server && kk.stream == e.Stream {
			delete(a.lastSet, kk)
		}
	}
	for kk := range a.sentOn {
		if kk.server == e.Server && kk.stream == e.Stream {
			delete(a.sentOn, kk)
		}
	}
	a.od.closeStream(e.Server, e.Stream)
}

// send counts a response: its type's figures, what it removed (explicitly, or by absence
// in SotW LDS/CDS), what it carried on a reconnected stream, whether it re-sent rejected
// content, and the server's tally; OnSend's callback sees it before the model does.
func (a *Accumulator) send(st *Step, e xdslog.Event) {
	k := key{e.Server, e.Stream, e.Type}
	f := st.fig(e.Type)
	f.Responses++
	f.Bytes += e.Bytes
	f.RemovedExplicit += len(e.Removed)
	a.od.send(e)
	f.countResources(e)
	info := SendInfo{TypeChanged: slices.Contains(st.Changed, e.Type), FirstOfType: !a.sentOn[k]}
	a.sentOn[k] = true
	for _, n := range e.Removed {
		st.RemovedNames = addName(st.RemovedNames, e.Type, n)
	}
	if e.Mode == protocol.SotW && (e.Type == "LDS" || e.Type == "CDS") {
		info.Absent = a.absent(st, f, e, k)
	}
	if a.fresh[key{e.Server, e.Stream, ""}] == e.Step && st.Reconnect != nil {
		info.OnNewStream = true
		st.Reconnect.countSend(e)
	}
	if a.onSend != nil {
		a.onSend(e, info)
	}
	if a.model.Rejected(e.Server, e.Stream, e.Type, e.Resources, e.Removed) > 0 {
		f.RejectedResends++
	}
	sf := a.server(e.Server)
	sf.SentVersions[e.Version]++
	for _, r := range e.Resources {
		sf.SentResources[e.Type+"/"+r.Name]++
	}
}

// countResources counts a send's resources: a "does not exist" answer is not content,
// and a redundant one's bytes are its share of the send.
func (f *TypeFigures) countResources(e xdslog.Event) {
	for _, r := range e.Resources {
		if r.NotFound {
			f.NotFound++
			continue
		}
		f.Resources++
		if r.IsRedundant() {
			f.Redundant++
			f.RedundantBytes += e.Bytes / len(e.Resources)
		}
	}
}

// absent counts and returns the names a SotW LDS/CDS send left out that the previous
// response on its stream (k) had: removals by absence.
func (a *Accumulator) absent(st *Step, f *TypeFigures, e xdslog.Event, k key) []string {
	var out []string
	names := make([]string, len(e.Resources))
	sent := make(map[string]bool, len(e.Resources))
	for i, r := range e.Resources {
		names[i] = r.Name
		sent[r.Name] = true
	}
	// A set, not a scan per name: a SotW CDS response at 10,000 clusters would
	// otherwise cost 10^8 comparisons under the recorder's lock.
	for _, n := range a.lastSet[k] {
		if !sent[n] {
			f.RemovedByAbsence++
			out = append(out, n)
			st.AbsentNames = addName(st.AbsentNames, e.Type, n)
		}
	}
	a.lastSet[k] = names
	return out
}

// countSend counts a send on a stream the step's reconnect opened.
func (re *Reconnect) countSend(e xdslog.Event) {
	re.Responses++
	re.Resources += len(e.Resources)
	re.Bytes += e.Bytes
	for _, r := range e.Resources {
		if r.IsRedundant() {
			re.Redundant++
		}
	}
}

// storm counts condensed NACK/re-send pairs (the log passed its size limit): every one is
// a send of content already rejected on this stream, and its NACK.
func (st *Step) storm(e xdslog.Event) {
	f := st.fig(e.Type)
	f.Responses += e.Sends
	f.Resources += e.Sends * len(e.Resources)
	f.Bytes += e.Bytes
	f.RejectedResends += e.Sends
	f.Nacks += e.Nacks
	for _, r := range e.Resources {
		if r.IsRedundant() {
			f.Redundant += e.Sends
			f.RedundantBytes += e.Bytes / len(e.Resources)
		}
	}
	if e.Nacks > 0 {
		first := e.TS
		if e.FirstTS != nil {
			first = *e.FirstTS
		}
		st.nackAt(e.Nacks, first, e.TS)
		st.mark(e)
	}
	st.nackError(e.Error)
}

// ack counts an ACK and its time from the step's publish (or start), and the server's
// first ACKed version of the type.
func (a *Accumulator) ack(st *Step, e xdslog.Event) {
	st.fig(e.Type).Acks++
	st.mark(e)
	ref := st.publish
	if ref.IsZero() {
		ref = st.start
	}
	st.acks = append(st.acks, float64(e.TS.Sub(ref).Microseconds())/1000)
	if fa := a.server(e.Server).FirstAck; fa[e.Type] == "" {
		fa[e.Type] = e.SentVersion
	}
}

// dataPlane counts a data-plane probe: on-demand fetches it waited for, the step's probes
// and its last observation.
func (a *Accumulator) dataPlane(st *Step, e xdslog.Event) {
	a.od.probe(e)
	if e.Probe == xdslog.ProbeLoad {
		// The steady load is counted by the step's traffic event (Step.Traffic), not
		// as probes: it is no expectation's evidence, and its failures (503 NC after a
		// removal) are judged by the step's traffic check.
		return
	}
	st.probe(e)
	// DataPlane and PublishToCorrectMS are about the step's expectation: its request
	// probes. Window and outage probes (hundreds a step, successes sampled) are counted
	// in Probes; they stand in for the last observation only in a step that sent no
	// request probe.
	request := ProbeKind(e) == xdslog.ProbeRequest
	if !request && st.dpRequest {
		return
	}
	st.dpRequest = request
	correct := e.Correct != nil && *e.Correct
	st.DataPlane = &DataPlane{Client: e.Client, RequestID: e.RequestID, Status: e.Status, Backend: e.Backend,
		Flags: e.Flags, Upstream: e.Upstream, Expected: e.Expected, Correct: correct}
	if request && correct && st.PublishToCorrectMS == nil && !st.publish.IsZero() {
		ms := float64(e.TS.Sub(st.publish).Microseconds()) / 1000
		st.PublishToCorrectMS = &ms
	}
}

// ClientView is a client_view event: whose view (envoy, grpc), the stream compared, how
// many resources the view listed, the findings (none: the view agrees with the log's
// model) or why no comparison was made.
type ClientView struct {
	Client   string   `json:"client"`
	Stream   int64    `json:"stream,omitempty"`
	Checked  int      `json:"checked"`
	Findings []string `json:"findings,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// addName adds name to m[typ] once.
func addName(m map[string][]string, typ, name string) map[string][]string {
	if m == nil {
		m = map[string][]string{}
	}
	if !slices.Contains(m[typ], name) {
		m[typ] = append(m[typ], name)
	}
	return m
}

func (st *Step) nackError(msg string) {
	if msg != "" && !slices.Contains(st.NackErrors, msg) && len(st.NackErrors) < 5 {
		st.NackErrors = append(st.NackErrors, msg)
	}
}

// Summary returns the figures so far: a copy, with totals, medians and rates computed.
func (a *Accumulator) Summary() *Summary {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := &Summary{Mode: a.sum.Mode, Events: a.sum.Events}
	for _, st := range a.sum.Steps {
		c := a.finishLocked(st, true)
		out.Total.Add(&c.Total)
		out.Steps = append(out.Steps, c)
	}
	return out
}

// Step returns the counts of one step so far (nil when it has no event yet), without
// Versions: live waiters call it on every event, and the held table of N = 10,000
// clusters is too big to copy each time (Summary has it).
func (a *Accumulator) Step(name string) *Step {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.steps[name]
	if !ok {
		return nil
	}
	return a.finishLocked(st, false)
}

// Server returns a copy of one control-plane instance's counts.
func (a *Accumulator) Server(n int) ServerFigures {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.server(n)
	return ServerFigures{StreamsOpened: s.StreamsOpened, StreamsClosed: s.StreamsClosed,
		SentVersions: maps.Clone(s.SentVersions), SentResources: maps.Clone(s.SentResources), FirstAck: maps.Clone(s.FirstAck)}
}

// Status is what the client of every open stream holds (`lab serve`'s status).
func (a *Accumulator) Status() []xdslog.StreamStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.model.Status()
}

// finishLocked copies st with its totals, median and rate computed, and its Versions
// when asked.
func (a *Accumulator) finishLocked(st *Step, versions bool) *Step {
	c := *st
	c.Types = make(map[string]*TypeFigures, len(st.Types))
	c.Total = TypeFigures{}
	for t, f := range st.Types {
		ff := *f
		c.Types[t] = &ff
		c.Total.Add(f)
	}
	c.Versions = nil
	if versions {
		held := st.Versions
		if st == a.cur && !a.noHeld {
			held = a.model.Held()
		}
		c.Versions = copyVersions(held)
	}
	c.NackErrors = slices.Clone(st.NackErrors)
	c.RemovedNames, c.AbsentNames = cloneNames(st.RemovedNames), cloneNames(st.AbsentNames)
	if st.Reconnect != nil {
		re := *st.Reconnect
		re.Resume = slices.Clone(re.Resume)
		c.Reconnect = &re
	}
	if len(st.acks) > 0 {
		m := stats.Median(st.acks)
		c.PublishToAckMS = &m
	}
	if n := st.nackN; n > 1 {
		if d := st.nackLast.Sub(st.nackFirst).Seconds(); d > 0 {
			c.NackRate = float64(n-1) / d
		}
	}
	c.OnDemand, c.fetches = st.onDemandFrom(), nil
	c.Probes = st.probesFrom()
	c.Traffic = st.trafficFrom()
	c.acks, c.probes, c.traffic, c.marks = nil, nil, nil, nil
	return &c
}

func cloneNames(m map[string][]string) map[string][]string {
	if m == nil {
		return nil
	}
	out := make(map[string][]string, len(m))
	for k, v := range m {
		out[k] = slices.Clone(v)
	}
	return out
}

func copyVersions(acc map[string]map[string]string) map[string]map[string]string {
	out := make(map[string]map[string]string, len(acc))
	for t, m := range acc {
		c := make(map[string]string, len(m))
		for k, v := range m {
			c[k] = v
		}
		out[t] = c
	}
	return out
}

// Add adds f's counts to t: the one rule for summing figures (a step's types into its
// total, the steps into a log's, and lab compare's totals over the steps it compares).
func (t *TypeFigures) Add(f *TypeFigures) {
	t.Responses += f.Responses
	t.Counts.Add(f.Counts)
	t.Bytes += f.Bytes
	t.Unmatched += f.Unmatched
	t.Stale += f.Stale
	t.NotFound += f.NotFound
	t.OnDemand += f.OnDemand
}
