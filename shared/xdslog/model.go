package xdslog

import (
	"maps"
	"slices"
	"time"

	"github.com/xds-workbench/lab/shared/protocol"
)

// Model is the protocol state a log implies, built one event at a time: per stream and
// type, what was sent and not answered yet, the latest nonce, the subscription, what the
// client holds, and which content it rejected. The Recorder keeps one to classify what
// it sees next (requests.go) and decides from it; a reader replays a log through one and
// gets the same state, because every decision is written into the event and Observe only
// applies events. These state rules live here and nowhere else.
type Model struct {
	streams map[streamKey]*streamState
	// published is the published state by type and name: set whole by a full publish and
	// edited by an incremental one (nil until the first full publish).
	published map[string]map[string]bool
	labels    *LabelBook
	// last is the most recently opened stream; its held table outlives the stream, so a
	// reader can say what the client held at the end of a step (Held).
	last *streamState
}

type streamKey struct {
	server int
	stream int64
}

type streamState struct {
	key   streamKey
	types map[string]*typeState
	node  string // the node ID its first request named
	// peer is the client's address and opened when the stream opened (its stream_open).
	peer   string
	opened time.Time
}

type typeState struct {
	pending  map[string]*sent // by nonce, not yet answered
	sentAll  map[string]*sent // by nonce, the last maxRemembered sends (answered or not)
	order    []string         // nonces of sentAll, oldest first
	accepted map[string]Accepted
	version  string              // the last accepted label
	rejected map[fingerprint]int // content -> times rejected
	names    []string            // the subscription as the server sees it
	known    bool
	// latest is the nonce of the latest send: in SotW only a request carrying it can
	// answer a send.
	latest string
	// explicit: names were ever given (then empty names unsubscribe); wildcard: the
	// subscription is wildcard now.
	explicit, wildcard bool
	// heldUnknown: the client resumed from a label the server cannot map to content, so
	// redundancy is unknown until its first ACK on this stream.
	heldUnknown bool
	// nackNonce and nackErr are the last NACK since the last ACK: the nonce it answered
	// and the client's error (cleared by an ACK).
	nackNonce, nackErr string
	storm              *condensed // recorder only: repeated pairs not yet written (storm.go)
}

type sent struct {
	version     string
	resources   []Resource
	removed     []string
	at          time.Time
	fingerprint fingerprint
	bytes       int
	condensed   bool // its line was folded into a storm summary (recorder only)
}

// maxRemembered bounds how many sends per stream and type stay correlatable.
const maxRemembered = 256

// NewModel returns an empty model; labels may be nil (a book of its own).
func NewModel(labels *LabelBook) *Model {
	if labels == nil {
		labels = NewLabelBook()
	}
	return &Model{streams: map[streamKey]*streamState{}, labels: labels}
}

func (m *Model) stream(server int, id int64) *streamState {
	k := streamKey{server, id}
	s, ok := m.streams[k]
	if !ok {
		s = &streamState{key: k, types: map[string]*typeState{}}
		m.streams[k] = s
	}
	return s
}

func (m *Model) typ(server int, id int64, typ string) *typeState {
	s := m.stream(server, id)
	t, ok := s.types[typ]
	if !ok {
		t = &typeState{pending: map[string]*sent{}, sentAll: map[string]*sent{}, accepted: map[string]Accepted{}, rejected: map[fingerprint]int{}}
		s.types[typ] = t
	}
	return t
}

// Observe applies one event.
func (m *Model) Observe(e Event) {
	switch e.Event {
	case EventPublish:
		m.publish(e)
	case EventStreamOpen:
		m.last = m.stream(e.Server, e.Stream)
		m.last.peer, m.last.opened = e.Peer, e.TS
	case EventStreamClose:
		delete(m.streams, streamKey{e.Server, e.Stream})
	case EventRequest:
		m.request(e)
	case EventStale:
		// The library drops it, so the server's subscription stays; but the client has
		// let go of what it unsubscribed from.
		t := m.typ(e.Server, e.Stream, e.Type)
		for _, n := range e.Removed {
			delete(t.accepted, n)
		}
	case EventSend:
		m.send(e)
	case EventStorm:
		// Sends and NACKs of one rejected content, condensed: the rejections count, and
		// the last send stands for all (offline only; the recorder observed each one).
		t := m.typ(e.Server, e.Stream, e.Type)
		s := m.send(Event{Server: e.Server, Stream: e.Stream, Type: e.Type, Nonce: e.LastNonce, Version: e.Version,
			Resources: e.Resources, Removed: e.Removed, Bytes: e.Bytes, TS: e.TS})
		t.rejected[s.fingerprint] += e.Nacks
		if e.Nacks > 0 {
			t.nackNonce, t.nackErr = e.LastNonce, e.Error
		}
		if e.Nacks >= e.Sends {
			delete(t.pending, e.LastNonce)
		}
	case EventAck:
		t := m.typ(e.Server, e.Stream, e.Type)
		s, ok := t.sentAll[e.Nonce]
		if !ok {
			return
		}
		delete(t.pending, e.Nonce)
		m.apply(e.Mode, e.Type, t, s)
		t.version = e.Accepted()
		t.heldUnknown = false
		t.nackNonce, t.nackErr = "", ""
		if e.Mode == protocol.SotW {
			m.labels.learn(e.Type, s.version, s.resources)
		}
	case EventNack:
		t := m.typ(e.Server, e.Stream, e.Type)
		if s, ok := t.sentAll[e.Nonce]; ok {
			delete(t.pending, e.Nonce)
			t.rejected[s.fingerprint]++
			t.nackNonce, t.nackErr = e.Nonce, e.Error
		}
	}
}

func (m *Model) request(e Event) {
	if e.Node != "" {
		m.stream(e.Server, e.Stream).node = e.Node
	}
	t := m.typ(e.Server, e.Stream, e.Type)
	t.known = true
	t.names = slices.Clone(e.Names)
	t.wildcard = e.Wildcard
	switch e.Kind {
	case RequestWildcard, RequestRepeat:
	case RequestResume:
		t.explicit = t.explicit || len(e.Names) > 0
	default:
		t.explicit = true
	}
	for n, v := range e.InitialVersions {
		t.accepted[n] = Accepted{Version: v, Hash: v}
	}
	for n, h := range e.Held {
		t.accepted[n] = Accepted{Version: e.Version, Hash: h}
	}
	if e.HeldUnknown {
		t.heldUnknown = true
	}
	// Names the client unsubscribed from are no longer held: Envoy unsubscribes when it
	// drops a resource (a removed cluster's endpoints), and a later subscription needs
	// the content again (warming), so sending it then is not redundant.
	for _, n := range e.Removed {
		delete(t.accepted, n)
	}
}

func (m *Model) send(e Event) *sent {
	t := m.typ(e.Server, e.Stream, e.Type)
	s := &sent{version: e.Version, resources: e.Resources, removed: e.Removed, at: e.TS,
		fingerprint: fingerprintOf(e.Resources, e.Removed), bytes: e.Bytes, condensed: e.condensed}
	t.latest = e.Nonce
	t.pending[e.Nonce] = s
	t.sentAll[e.Nonce] = s
	t.order = append(t.order, e.Nonce)
	// Bounded memory under a NACK storm: forget the oldest sends. A late answer to a
	// forgotten nonce is unmatched, never guessed.
	if len(t.order) > maxRemembered {
		old := t.order[0]
		t.order = t.order[1:]
		delete(t.sentAll, old)
		delete(t.pending, old)
	}
	return s
}

// apply updates what the client holds after an ACK. In SotW, LDS and CDS responses are
// the full set (absence is removal); RDS and EDS absence removes nothing. In delta,
// removed_resources removes listeners, clusters and virtual hosts (VhdsSubscription's
// removeVhosts); Envoy ignores it for RDS and EDS.
func (m *Model) apply(mode protocol.Mode, typ string, t *typeState, s *sent) {
	full := typ == "LDS" || typ == "CDS"
	if mode == protocol.SotW && full {
		clear(t.accepted)
	}
	removes := full || (mode == protocol.Delta && typ == "VHDS")
	for _, x := range s.resources {
		if x.NotFound {
			// "Does not exist": the client holds nothing under that name.
			delete(t.accepted, x.Name)
			continue
		}
		t.accepted[x.Name] = Accepted{Version: x.Version, Hash: x.Hash}
	}
	if removes {
		for _, n := range s.removed {
			delete(t.accepted, n)
		}
	}
}

// publish applies a publish event: a full one lists the whole state, an incremental one
// only what it added or modified (Resources) and deleted (Deleted). An incremental publish
// with no full one before it (a log cut at the front) leaves the state unknown.
func (m *Model) publish(e Event) {
	if !e.Incremental {
		m.published = map[string]map[string]bool{}
	} else if m.published == nil {
		return
	}
	for _, x := range e.Resources {
		if m.published[x.Type] == nil {
			m.published[x.Type] = map[string]bool{}
		}
		m.published[x.Type][x.Name] = true
	}
	for _, x := range e.Deleted {
		delete(m.published[x.Type], x.Name)
	}
}

// PublishedCount is how many names of typ the published state has; ok is false before
// any full publish (a tap's log has none).
func (m *Model) PublishedCount(typ string) (n int, ok bool) {
	if m.published == nil {
		return 0, false
	}
	return len(m.published[typ]), true
}

// Node is the node ID the stream's first request named ("" when none did, or the stream
// is unknown).
func (m *Model) Node(server int, stream int64) string {
	if s, ok := m.streams[streamKey{server, stream}]; ok {
		return s.node
	}
	return ""
}

// Published reports whether the published state has typ/name; ok is false before any
// full publish.
func (m *Model) Published(typ, name string) (has, ok bool) {
	if m.published == nil {
		return false, false
	}
	return m.published[typ][name], true
}

// Redundant reports whether the client on (server, stream) holds exactly hash for name:
// true or false, or unknown (ok false) when it resumed from a label the server could not
// map and has not ACKed anything since.
func (m *Model) Redundant(server int, stream int64, typ, name, hash string) (redundant, ok bool) {
	t := m.typ(server, stream, typ)
	if a, held := t.accepted[name]; held && a.Hash == hash {
		return true, true
	}
	return false, !t.heldUnknown
}

// Rejected reports how many times the client on (server, stream) rejected this content.
func (m *Model) Rejected(server int, stream int64, typ string, res []Resource, removed []string) int {
	return m.typ(server, stream, typ).rejected[fingerprintOf(res, removed)]
}

// Pending counts the sends on (server, stream) never answered.
func (m *Model) Pending(server int, stream int64) int {
	n := 0
	if s, ok := m.streams[streamKey{server, stream}]; ok {
		for _, t := range s.types {
			n += len(t.pending)
		}
	}
	return n
}

// Status returns every open stream's held state, ordered by server and stream.
func (m *Model) Status() []StreamStatus {
	keys := slices.SortedFunc(maps.Keys(m.streams), func(a, b streamKey) int {
		if a.server != b.server {
			return a.server - b.server
		}
		return int(a.stream - b.stream)
	})
	out := make([]StreamStatus, 0, len(keys))
	for _, k := range keys {
		out = append(out, m.streams[k].status())
	}
	return out
}

// Held is what the client of the most recently opened stream holds (after the stream
// closed too): type -> name -> version.
func (m *Model) Held() map[string]map[string]string {
	out := map[string]map[string]string{}
	if m.last == nil {
		return out
	}
	for typ, t := range m.last.types {
		if len(t.accepted) == 0 {
			continue
		}
		out[typ] = map[string]string{}
		for n, a := range t.accepted {
			out[typ][n] = a.Version
		}
	}
	return out
}

func (s *streamState) status() StreamStatus {
	st := StreamStatus{Server: s.key.server, Stream: s.key.stream, Node: s.node, Peer: s.peer, Opened: s.opened,
		Accepted: map[string]map[string]Accepted{}, Versions: map[string]string{}, Types: map[string]TypeStatus{}}
	for typ, t := range s.types {
		st.Accepted[typ] = maps.Clone(t.accepted)
		if t.version != "" {
			st.Versions[typ] = t.version
		}
		st.Types[typ] = t.status()
	}
	return st
}

// status says where the type stands with its latest send, the only one that counts (in
// SotW an older nonce can no longer be answered, in delta it is superseded).
func (t *typeState) status() TypeStatus {
	ts := TypeStatus{Version: t.version, Wildcard: t.wildcard}
	if len(t.names) > 0 {
		ts.Names = slices.Clone(t.names)
	}
	s, ok := t.sentAll[t.latest]
	if t.latest == "" || !ok {
		ts.State = TypeNotSent
		return ts
	}
	ts.SentVersion = s.version
	_, pending := t.pending[t.latest]
	switch {
	case t.nackErr != "" && (t.nackNonce == t.latest || pending && t.rejected[s.fingerprint] > 0):
		// NACKed, or re-sent after a NACK with the same content (a NACK storm): the
		// client keeps running Version.
		ts.State, ts.Nonce, ts.Error = TypeNacked, t.nackNonce, t.nackErr
		// The latest send is the NACKed one or a re-send of its content.
		ts.Rejected = make(map[string]string, len(s.resources))
		for _, r := range s.resources {
			ts.Rejected[r.Name] = r.Hash
		}
	case pending:
		at := s.at
		ts.State, ts.Nonce, ts.Since = TypeStale, t.latest, &at
	default:
		ts.State = TypeSynced
	}
	return ts
}
