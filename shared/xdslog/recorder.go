package xdslog

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"
)

// Accepted is what a client accepted for one resource on one stream.
type Accepted struct {
	Version string `json:"version"`
	Hash    string `json:"hash"`
}

// StreamStatus is a snapshot of one open stream: per type, per resource, what the client
// has accepted.
type StreamStatus struct {
	Server   int                            `json:"server"`
	Stream   int64                          `json:"stream"`
	Accepted map[string]map[string]Accepted `json:"accepted"`
	// Versions is the last accepted version label per type.
	Versions map[string]string `json:"versions"`
}

// Feedback is the client's answer carried by a request with a response nonce.
type Feedback struct {
	Nonce string
	// ClientVersion is the SotW request's version_info (ignored in delta).
	ClientVersion string
	// Error is the error_detail message; nil for an ACK.
	Error *string
}

// Recorder writes xds.log lines and keeps, per stream, what was sent and what the client
// accepted, so that every ACK/NACK is tied to the send it answers. A nil *Recorder is a
// valid no-op recorder (used to measure the recorder's own overhead).
type Recorder struct {
	mu      sync.Mutex
	out     io.Writer
	mode    string
	server  int
	step    string
	now     func() time.Time
	streams map[int64]*streamState
	err     error
	lines   int
	observe func(Event)
	buf     []byte // the line buffer of events with resources
	// written counts the log's bytes (including what the file held before, see
	// WithLogSize); past maxBytes storms are condensed (storm.go).
	written  int64
	maxBytes int64
}

type streamState struct {
	types map[string]*typeState
}

type typeState struct {
	pending  map[string]*sent // by nonce, not yet answered
	sentAll  map[string]*sent // by nonce, the last maxRemembered sends (answered or not)
	order    []string         // nonces of sentAll, oldest first
	accepted map[string]Accepted
	version  string
	rejected map[fingerprint]int // content -> times rejected
	names    []string
	known    bool
	storm    *condensed // repeated NACK/re-send pairs not yet written (storm.go)
}

type sent struct {
	version     string
	resources   []Resource
	removed     []string
	at          time.Time
	fingerprint fingerprint
	bytes       int
	condensed   bool // its line was folded into a storm summary
}

// maxRemembered bounds how many sends per stream and type stay correlatable.
const maxRemembered = 256

// Option configures a Recorder.
type Option func(*Recorder)

// WithServer sets the control-plane instance number written in every line; a restarted
// server gets the next number so its stream IDs (which restart at 1) are not confused
// with the old server's.
func WithServer(n int) Option { return func(r *Recorder) { r.server = n } }

// WithObserver calls fn with every event written, under the recorder's lock (fn must be
// quick and must not call the recorder). The runner uses it to wait on conditions without
// re-reading the log.
func WithObserver(fn func(Event)) Option { return func(r *Recorder) { r.observe = fn } }

// WithClock replaces time.Now (tests).
func WithClock(now func() time.Time) Option { return func(r *Recorder) { r.now = now } }

// NewRecorder writes to out, which should be unbuffered (an *os.File): each event is one
// Write, so the log is flushed line by line and a crash loses at most the line in flight.
func NewRecorder(out io.Writer, mode string, opts ...Option) *Recorder {
	r := &Recorder{out: out, mode: mode, server: 1, now: time.Now, streams: map[int64]*streamState{}}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Mode returns the recorder's mode.
func (r *Recorder) Mode() string {
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
	r.observeLocked(e)
}

// observeLocked hands e to the observer. Events condensed into a storm summary are
// observed one by one as if written, so live tallies and log replays agree.
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

// Publish records a new desired state.
func (r *Recorder) Publish(version string, res []Resource, changed []string) {
	if r == nil {
		return
	}
	r.Emit(Event{Event: EventPublish, Version: version, Resources: res, Changed: changed})
}

func (r *Recorder) typeLocked(stream int64, typ string) *typeState {
	s, ok := r.streams[stream]
	if !ok {
		s = &streamState{types: map[string]*typeState{}}
		r.streams[stream] = s
	}
	t, ok := s.types[typ]
	if !ok {
		t = &typeState{pending: map[string]*sent{}, sentAll: map[string]*sent{}, accepted: map[string]Accepted{}, rejected: map[fingerprint]int{}}
		s.types[typ] = t
	}
	return t
}

// StreamOpen records a new stream.
func (r *Recorder) StreamOpen(stream int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.streams[stream]; !ok {
		r.streams[stream] = &streamState{types: map[string]*typeState{}}
	}
	r.emitLocked(Event{Event: EventStreamOpen, Stream: stream})
}

// StreamClose records the end of a stream; sends never answered are counted as dropped,
// and the stream's state is cleared.
func (r *Recorder) StreamClose(stream int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	dropped := 0
	if s, ok := r.streams[stream]; ok {
		for _, typ := range slices.Sorted(maps.Keys(s.types)) {
			t := s.types[typ]
			r.flushStormLocked(stream, typ, t, true)
			dropped += len(t.pending)
		}
	}
	delete(r.streams, stream)
	r.emitLocked(Event{Event: EventStreamClose, Stream: stream, Dropped: &dropped})
}

// Subscribe records a first subscription or a resubscription (names changed). For SotW,
// version is the request's version_info (non-empty on a resume after reconnect); for
// delta, initial carries initial_resource_versions. It reports whether a line was written:
// a SotW ACK that repeats the same names is not a new subscription.
func (r *Recorder) Subscribe(stream int64, typ string, names []string, version string, initial map[string]string) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.typeLocked(stream, typ)
	sorted := slices.Sorted(slices.Values(names))
	if t.known && slices.Equal(sorted, t.names) && len(initial) == 0 {
		return false
	}
	t.known = true
	t.names = sorted
	r.flushStormLocked(stream, typ, t, true)
	if names == nil {
		names = []string{}
	}
	r.emitLocked(Event{Event: EventRequest, Stream: stream, Type: typ, Names: names, Version: version, InitialVersions: initial})
	return true
}

// DeltaSubscribe records a delta request that changes the subscription: the first request
// of a type (with initial_resource_versions) or one with names to subscribe or unsubscribe.
// The event's names are the whole subscription after the change.
func (r *Recorder) DeltaSubscribe(stream int64, typ string, subscribe, unsubscribe []string, initial map[string]string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.typeLocked(stream, typ)
	if t.known && len(subscribe) == 0 && len(unsubscribe) == 0 {
		return
	}
	set := map[string]bool{}
	for _, n := range t.names {
		set[n] = true
	}
	for _, n := range subscribe {
		set[n] = true
	}
	for _, n := range unsubscribe {
		delete(set, n)
	}
	t.known = true
	t.names = slices.Sorted(maps.Keys(set))
	r.flushStormLocked(stream, typ, t, true)
	// What the client says it already runs counts as accepted on this stream, so a
	// re-send of the same content after a reconnect is marked redundant.
	for n, v := range initial {
		t.accepted[n] = Accepted{Version: v, Hash: v}
	}
	names := t.names
	if names == nil {
		names = []string{}
	}
	r.emitLocked(Event{Event: EventRequest, Stream: stream, Type: typ, Names: names, InitialVersions: initial})
}

// Send records a response. Each resource is marked redundant when the client already
// accepted exactly this content for this name on this stream.
func (r *Recorder) Send(stream int64, typ, nonce, version string, res []Resource, removed []string, bytes int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.typeLocked(stream, typ)
	out := make([]Resource, len(res))
	for i, x := range res {
		a, ok := t.accepted[x.Name]
		x.Redundant = &redundantFalse
		if ok && a.Hash == x.Hash {
			x.Redundant = &redundantTrue
		}
		x.Type = ""
		out[i] = x
	}
	s := &sent{version: version, resources: out, removed: removed, at: r.now(), fingerprint: fingerprintOf(out, removed), bytes: bytes}
	t.pending[nonce] = s
	t.sentAll[nonce] = s
	t.order = append(t.order, nonce)
	// Bounded memory under a NACK storm: forget the oldest sends. A late answer to a
	// forgotten nonce is recorded as unmatched, never guessed.
	if len(t.order) > maxRemembered {
		old := t.order[0]
		t.order = t.order[1:]
		delete(t.sentAll, old)
		delete(t.pending, old)
	}
	e := Event{Event: EventSend, Stream: stream, Type: typ, Nonce: nonce, Version: version, Resources: out, Removed: removed, Bytes: bytes}
	if r.condenseLocked(t, s) {
		s.condensed = true
		t.storm.addSend(nonce, s)
		r.stampLocked(&e)
		r.observeLocked(e)
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

// Feedback classifies a request that carries a response nonce: an ACK or NACK of a send on
// this stream and type, or unmatched (recorded as is, never guessed to be an ACK). It
// returns the event written.
func (r *Recorder) Feedback(stream int64, typ string, fb Feedback) Event {
	if r == nil {
		return Event{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.typeLocked(stream, typ)
	s, ok := t.sentAll[fb.Nonce]
	if !ok {
		r.flushStormLocked(stream, typ, t, true)
		e := Event{Event: EventUnmatched, Stream: stream, Type: typ, Nonce: fb.Nonce}
		if r.mode == ModeSotW {
			e.AcceptedVersion = &fb.ClientVersion
		}
		if fb.Error != nil {
			e.Error = *fb.Error
		}
		r.emitLocked(e)
		return e
	}
	_, wasPending := t.pending[fb.Nonce]
	delete(t.pending, fb.Nonce)
	lat := float64(r.now().Sub(s.at).Microseconds()) / 1000
	if !wasPending {
		lat = 0 // a second answer to the same nonce: no meaningful latency
	}
	accepted := fb.ClientVersion
	if r.mode == ModeDelta {
		accepted = s.version
	}
	e := Event{Stream: stream, Type: typ, Nonce: fb.Nonce, SentVersion: s.version, AcceptedVersion: &accepted, LatencyMS: &lat}
	if fb.Error == nil || !s.condensed {
		r.flushStormLocked(stream, typ, t, true)
	}
	if fb.Error != nil {
		t.rejected[s.fingerprint]++
		e.Event = EventNack
		e.Error = *fb.Error
		e.Repeat = t.rejected[s.fingerprint]
		if r.mode == ModeDelta {
			// Delta NACK: the client accepted none of the response; its accepted label
			// stays the last ACKed one.
			e.AcceptedVersion = &t.version
		}
		if s.condensed && t.storm != nil {
			r.stampLocked(&e)
			t.storm.addNack(e)
			r.observeLocked(e)
			r.flushStormLocked(stream, typ, t, false)
			return e
		}
	} else {
		e.Event = EventAck
		r.applyLocked(t, typ, s)
		t.version = accepted
	}
	r.emitLocked(e)
	return e
}

// applyLocked updates the accepted table after an ACK. In SotW, LDS and CDS responses
// are the full set (absence is removal); RDS and EDS absence removes nothing. In delta,
// removed_resources removes.
func (r *Recorder) applyLocked(t *typeState, typ string, s *sent) {
	if r.mode == ModeSotW && (typ == "LDS" || typ == "CDS") {
		clear(t.accepted)
	}
	for _, x := range s.resources {
		t.accepted[x.Name] = Accepted{Version: x.Version, Hash: x.Hash}
	}
	for _, n := range s.removed {
		delete(t.accepted, n)
	}
}

// Status returns a snapshot of every open stream, ordered by stream ID.
func (r *Recorder) Status() []StreamStatus {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := slices.Sorted(maps.Keys(r.streams))
	out := make([]StreamStatus, 0, len(ids))
	for _, id := range ids {
		st := StreamStatus{Server: r.server, Stream: id, Accepted: map[string]map[string]Accepted{}, Versions: map[string]string{}}
		for typ, t := range r.streams[id].types {
			st.Accepted[typ] = maps.Clone(t.accepted)
			if t.version != "" {
				st.Versions[typ] = t.version
			}
		}
		out = append(out, st)
	}
	return out
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
