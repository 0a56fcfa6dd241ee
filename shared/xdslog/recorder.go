package xdslog

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/xds-workbench/lab/shared/protocol"
)

// Accepted is what a client accepted for one resource on one stream.
type Accepted struct {
	Version string `json:"version"`
	Hash    string `json:"hash"`
}

// StreamStatus is a snapshot of one open stream: who the client is, per type where it
// stands with the latest send, and per resource what it has accepted.
type StreamStatus struct {
	Server int   `json:"server"`
	Stream int64 `json:"stream"`
	// Node is the node ID its first request named ("" before one did); Peer the
	// client's address; Opened when the stream opened.
	Node     string                         `json:"node"`
	Peer     string                         `json:"peer,omitempty"`
	Opened   time.Time                      `json:"opened"`
	Accepted map[string]map[string]Accepted `json:"accepted"`
	// Versions is the last accepted version label per type.
	Versions map[string]string `json:"versions"`
	// Types is, per type the client asked for or was sent, where it stands.
	Types map[string]TypeStatus `json:"types"`
}

// Type states (TypeStatus.State), after istioctl proxy-status.
const (
	// TypeSynced: the latest send was ACKed.
	TypeSynced = "SYNCED"
	// TypeStale: the latest send is not answered yet (Nonce, Since).
	TypeStale = "STALE"
	// TypeNacked: the latest content was rejected (Error); the client runs Version.
	TypeNacked = "NACKED"
	// TypeNotSent: the client asked, nothing was sent.
	TypeNotSent = "NOT SENT"
)

// TypeStatus is where one type of one stream stands with its latest send.
type TypeStatus struct {
	State string `json:"state"`
	// Version is the label the client last accepted (runs), "" when none.
	Version string `json:"version"`
	// SentVersion is the latest send's label.
	SentVersion string `json:"sent_version,omitempty"`
	// Nonce is the pending send's (STALE) or the NACKed one's (NACKED).
	Nonce string `json:"nonce,omitempty"`
	// Since is when the pending send went out (STALE).
	Since *time.Time `json:"since,omitempty"`
	// Error is the client's error_detail (NACKED).
	Error string `json:"error,omitempty"`
	// Rejected is what the NACKed send carried (NACKED): name -> content hash. A client
	// that applies the valid part of a response it NACKs (grpc-go) is checked against it
	// (experiments/clientview).
	Rejected map[string]string `json:"rejected,omitempty"`
	// Names is the subscription as the server sees it (the names of the client's latest
	// request of the type; empty for a wildcard); Wildcard says whether it is one.
	Names    []string `json:"names,omitempty"`
	Wildcard bool     `json:"wildcard,omitempty"`
}

// Feedback is the client's answer carried by a request with a response nonce.
type Feedback struct {
	Nonce string
	// ClientVersion is the SotW request's version_info (ignored in delta).
	ClientVersion string
	// Error is the error_detail message; nil for an ACK.
	Error *string
}

// Recorder writes xds.log lines. It classifies what the front end sees (sends, requests)
// from its Model of the protocol state, writes the decision as an event, and applies the
// event to the model, so that every ACK/NACK is tied to the send it answers. A nil
// *Recorder is a valid no-op recorder (used to measure the recorder's own overhead).
type Recorder struct {
	mu      sync.Mutex
	out     io.Writer
	mode    protocol.Mode
	server  int
	step    string
	now     func() time.Time
	model   *Model
	labels  *LabelBook
	err     error
	lines   int
	observe func(Event)
	buf     []byte // the line buffer of events with resources
	// written counts the log's bytes (including what the file held before, see
	// WithLogSize); past maxBytes storms are condensed (storm.go).
	written  int64
	maxBytes int64
	// node is the node ID of the request being recorded, for its request event.
	node string
	// tapUpstream is set for lab tap's recorder (WithTap): its session line says so.
	tapUpstream string
}

// Option configures a Recorder.
type Option func(*Recorder)

// WithServer sets the control-plane instance number written in every line; a restarted
// server gets the next number so its stream IDs (which restart at 1) are not confused
// with the old server's.
func WithServer(n int) Option { return func(r *Recorder) { r.server = n } }

// WithObserver calls fn with every event, under the recorder's lock (fn must be quick and
// must not call the recorder). Events folded into a storm summary are observed one by
// one as if written; the summary itself is not.
func WithObserver(fn func(Event)) Option { return func(r *Recorder) { r.observe = fn } }

// WithTap marks the recorder as lab tap's, forwarding to upstream: its session line
// (BeginSession) carries Source SourceTap, Upstream and NoPublish.
func WithTap(upstream string) Option { return func(r *Recorder) { r.tapUpstream = upstream } }

// WithClock replaces time.Now (tests).
func WithClock(now func() time.Time) Option { return func(r *Recorder) { r.now = now } }

// NewRecorder writes to out, which should be unbuffered (an *os.File): each event is one
// Write, so the log is flushed line by line and a crash loses at most the line in flight.
func NewRecorder(out io.Writer, mode protocol.Mode, opts ...Option) *Recorder {
	r := &Recorder{out: out, mode: mode, server: 1, now: time.Now}
	for _, o := range opts {
		o(r)
	}
	if r.labels == nil {
		r.labels = NewLabelBook()
	}
	r.model = NewModel(r.labels)
	return r
}

// SetClock replaces the recorder's clock from now on (nil: time.Now). Lab tap records
// on a goroutine of its own, behind the forwarding: before each call it sets a clock
// that returns when the tap saw the frame, so events (and ACK latency, send to ACK) are
// stamped with the observation times, not the recording times.
func (r *Recorder) SetClock(now func() time.Time) {
	if r == nil {
		return
	}
	if now == nil {
		now = time.Now
	}
	r.mu.Lock()
	r.now = now
	r.mu.Unlock()
}

// Mode returns the recorder's mode.
func (r *Recorder) Mode() protocol.Mode {
	if r == nil {
		return ""
	}
	return r.mode
}

// SetStep labels every following line with step.
func (r *Recorder) SetStep(step string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.step = step
	r.mu.Unlock()
}

// Err returns the first write error, if any.
func (r *Recorder) Err() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// stampLocked fills what every line carries: time, mode, step and server.
func (r *Recorder) stampLocked(e *Event) {
	if e.TS.IsZero() || e.Event != EventDataPlane {
		e.TS = r.now().UTC()
	}
	e.Mode = r.mode
	e.Step = r.step
	e.Server = r.server
}

// emitLocked writes e, applies it to the model and hands it to the observer.
func (r *Recorder) emitLocked(e Event) {
	r.stampLocked(&e)
	// The resource list (up to 20,000 entries) is encoded by hand and spliced in; the rest
	// of the event goes through encoding/json.
	res := e.Resources
	e.Resources = nil
	b, err := json.Marshal(e)
	if err != nil {
		if r.err == nil {
			r.err = fmt.Errorf("encode %s event: %w", e.Event, err)
		}
		return
	}
	if len(res) > 0 {
		// Reuse one buffer across events: a 10,000-resource line is a few MB.
		line := append(r.buf[:0], b[:len(b)-1]...)
		line = append(line, `,"resources":`...)
		line = res.appendJSON(line)
		b = append(line, '}')
		r.buf = b[:0]
	}
	b = append(b, '\n')
	n, err := r.out.Write(b)
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("write xds.log: %w", err)
	}
	r.written += int64(n)
	r.lines++
	e.Resources = res
	if e.Event == EventStorm {
		return // its events were applied and observed one by one (storm.go)
	}
	r.model.Observe(e)
	r.observeLocked(e)
}

// foldLocked is emitLocked for an event folded into a storm summary: applied and observed,
// not written.
func (r *Recorder) foldLocked(e Event) {
	r.stampLocked(&e)
	e.condensed = true
	r.model.Observe(e)
	r.observeLocked(e)
}

func (r *Recorder) observeLocked(e Event) {
	if r.observe != nil {
		r.observe(e)
	}
}

// Emit writes an event that carries no protocol state (step markers, data-plane results).
// A data-plane event keeps a TS set by the caller: the time its response arrived, which
// precedes the evidence lookups done before it is written.
func (r *Recorder) Emit(e Event) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emitLocked(e)
}

// Publish records a new desired state in full: every resource it has.
func (r *Recorder) Publish(version string, res []Resource, changed []string) {
	r.Emit(Event{Event: EventPublish, Version: version, Resources: res, Changed: changed})
}

func (r *Recorder) typeLocked(stream int64, typ string) *typeState {
	return r.model.typ(r.server, stream, typ)
}

// StreamOpen records a new stream from peer, the client's address ("" when unknown).
func (r *Recorder) StreamOpen(stream int64, peer string) {
	r.Emit(Event{Event: EventStreamOpen, Stream: stream, Peer: peer})
}

// StreamClose records the end of a stream; sends never answered are counted as dropped.
func (r *Recorder) StreamClose(stream int64) { r.StreamCloseStatus(stream, "") }

// StreamCloseStatus is StreamClose with why the stream ended (its Error), e.g. lab tap's
// "upstream closed the stream: Unavailable: ...".
func (r *Recorder) StreamCloseStatus(stream int64, why string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.model.streams[streamKey{r.server, stream}]; ok {
		for _, typ := range slices.Sorted(maps.Keys(s.types)) {
			r.flushStormLocked(stream, typ, s.types[typ], true)
		}
	}
	dropped := r.model.Pending(r.server, stream)
	r.emitLocked(Event{Event: EventStreamClose, Stream: stream, Dropped: &dropped, Error: why})
}

// Send records a response. Each resource is marked redundant when the client already
// holds exactly this content for this name on this stream (unknown when it resumed from
// a label the server cannot map); a not-found answer (Resource.NotFound) never is.
func (r *Recorder) Send(stream int64, typ, nonce, version string, res []Resource, removed []string, bytes int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.typeLocked(stream, typ)
	out := make([]Resource, len(res))
	for i, x := range res {
		switch redundant, known := r.model.Redundant(r.server, stream, typ, x.Name, x.Hash); {
		case x.NotFound:
			x.Redundant = nil // an answer, not content
		case redundant:
			x.Redundant = &redundantTrue
		case !known:
			x.Redundant = nil
		default:
			x.Redundant = &redundantFalse
		}
		x.Type = ""
		out[i] = x
	}
	e := Event{Event: EventSend, Stream: stream, Type: typ, Nonce: nonce, Version: version, Resources: out, Removed: removed, Bytes: bytes}
	if r.condenseLocked(t, out, removed) {
		t.storm.addSend(nonce, version, out, removed, bytes, r.now())
		r.foldLocked(e)
		r.flushStormLocked(stream, typ, t, false)
		return
	}
	r.flushStormLocked(stream, typ, t, true)
	r.emitLocked(e)
}

// fingerprint identifies a response's content independent of nonce, version label and
// resource order, so that the same rejected content re-sent under a new nonce counts as a
// repeat. It combines a 64-bit FNV-1a hash of each entry order-independently (sum and
// xor) instead of sorting and joining: a SotW send can carry 10,000 resources.
type fingerprint struct {
	sum, xor uint64
	n        int
}

func fingerprintOf(res []Resource, removed []string) fingerprint {
	var f fingerprint
	add := func(parts ...string) {
		h := uint64(14695981039346656037)
		for _, p := range parts {
			for i := 0; i < len(p); i++ {
				h ^= uint64(p[i])
				h *= 1099511628211
			}
			h ^= 0xff // separator
			h *= 1099511628211
		}
		f.sum += h
		f.xor ^= h
		f.n++
	}
	for _, x := range res {
		add(x.Name, x.Hash)
	}
	for _, n := range removed {
		add("-", n)
	}
	return f
}

// Feedback records the answer a response nonce carries: the ACK or NACK of that send on
// this stream and type (once: a send already answered yields no event, the zero Event),
// or unmatched (recorded as is, never guessed to be an ACK). It returns the event
// written. It does not apply SotW's latest-nonce rule; SotW does.
func (r *Recorder) Feedback(stream int64, typ string, fb Feedback) Event {
	if r == nil {
		return Event{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.feedbackLocked(stream, typ, fb)
}

func (r *Recorder) feedbackLocked(stream int64, typ string, fb Feedback) Event {
	t := r.typeLocked(stream, typ)
	s, ok := t.sentAll[fb.Nonce]
	if !ok {
		r.flushStormLocked(stream, typ, t, true)
		e := Event{Event: EventUnmatched, Stream: stream, Type: typ, Nonce: fb.Nonce}
		if r.mode == protocol.SotW {
			e.AcceptedVersion = &fb.ClientVersion
		}
		if fb.Error != nil {
			e.Error = CleanError(*fb.Error)
		}
		r.emitLocked(e)
		return e
	}
	if _, pending := t.pending[fb.Nonce]; !pending {
		// A send is answered once: a later request carrying the same nonce is a re-request
		// or a subscription change (requests.go), never a second ACK.
		return Event{}
	}
	lat := float64(r.now().Sub(s.at).Microseconds()) / 1000
	accepted := fb.ClientVersion
	if r.mode == protocol.Delta {
		accepted = s.version
	}
	e := Event{Stream: stream, Type: typ, Nonce: fb.Nonce, SentVersion: s.version, AcceptedVersion: &accepted, LatencyMS: &lat}
	if fb.Error == nil {
		e.Event = EventAck
		r.flushStormLocked(stream, typ, t, true)
		r.emitLocked(e)
		return e
	}
	e.Event = EventNack
	e.Error = CleanError(*fb.Error)
	e.Repeat = t.rejected[s.fingerprint] + 1
	if r.mode == protocol.Delta {
		// Delta NACK: the client accepted none of the response; its accepted label stays
		// the last ACKed one.
		v := t.version
		e.AcceptedVersion = &v
	}
	if s.condensed && t.storm != nil {
		t.storm.addNack(e)
		r.foldLocked(e)
		r.flushStormLocked(stream, typ, t, false)
		return e
	}
	r.flushStormLocked(stream, typ, t, true)
	r.emitLocked(e)
	return e
}

// Status returns a snapshot of every open stream, ordered by stream ID.
func (r *Recorder) Status() []StreamStatus {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.model.Status()
}

// Lines returns how many lines were written.
func (r *Recorder) Lines() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lines
}
