package xdslog

import (
	"maps"
	"slices"
	"sync"

	"github.com/xds-workbench/lab/shared/protocol"
)

// This file classifies requests the way the xDS protocol does (Envoy's
// api-docs/xds_protocol.rst): "ACK/NACK and resource type instance version", "Resource
// updates", "How the client specifies what resources to return" and "Knowing when a
// requested resource does not exist". Every decision is written into the event (kind,
// added/removed, held), so a reader replays decisions instead of re-deriving them.

// SotWRequest is one SotW DiscoveryRequest as the recorder needs it.
type SotWRequest struct {
	// Node is the request's node ID ("" when it carries no node).
	Node        string
	Names       []string
	VersionInfo string
	Nonce       string
	// Error is error_detail's message; nil when the request has none.
	Error *string
}

// SotW records a SotW request and returns the feedback event it carried: an ack or nack
// of the latest send of its type on the stream, a stale or unmatched event, or the zero
// Event when it answered nothing. Rules:
//   - only the latest nonce sent for the type, not answered yet, is an ACK or NACK;
//   - an older nonce (or none, once something was sent) is stale: go-control-plane drops
//     the request (pkg/server/sotw/v3/ads.go), so it changes nothing on the server;
//   - a request repeating an answered nonce is a re-request or a subscription change;
//   - names that differ from the previous request change the subscription, ACK or not;
//   - empty names are a wildcard only while the type was never explicitly subscribed on
//     the stream; after that they unsubscribe from everything.
func (r *Recorder) SotW(stream int64, typ string, q SotWRequest) Event {
	return r.request(q.Node, func() Event { return r.sotwLocked(stream, typ, q) })
}

// request records one request from node under the lock: the events it emits carry the
// node (r.node). A nil Recorder records nothing.
func (r *Recorder) request(node string, record func() Event) Event {
	if r == nil {
		return Event{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.node = node
	defer func() { r.node = "" }()
	return record()
}

// answerLocked records the feedback of a request that carries a nonce (f.Nonce), and
// returns the zero Event for one that carries none.
func (r *Recorder) answerLocked(stream int64, typ string, f Feedback) Event {
	if f.Nonce == "" {
		return Event{}
	}
	return r.feedbackLocked(stream, typ, f)
}

// sotwLocked is SotW with the lock held.
func (r *Recorder) sotwLocked(stream int64, typ string, q SotWRequest) Event {
	t := r.typeLocked(stream, typ)
	names := slices.Sorted(slices.Values(q.Names))
	if t.latest != "" && q.Nonce != t.latest {
		if _, ok := t.sentAll[q.Nonce]; ok || q.Nonce == "" {
			return r.staleLocked(stream, typ, t, names, q)
		}
	}
	fb := r.answerLocked(stream, typ, Feedback{Nonce: q.Nonce, ClientVersion: q.VersionInfo, Error: q.Error})
	if fb.Event == EventUnmatched && t.latest != "" {
		return fb // a nonce never sent: the library drops the request as stale too
	}
	if !t.known {
		r.firstRequestLocked(stream, typ, t, names, q.VersionInfo, nil)
		return fb
	}
	repeat := Event{Stream: stream, Type: typ, Kind: RequestRepeat, Names: t.names, Wildcard: t.wildcard, Version: q.VersionInfo, Nonce: q.Nonce}
	if len(names) == 0 && !t.explicit {
		if fb.Event == "" {
			r.requestLocked(t, repeat) // still a legacy wildcard
		}
		return fb
	}
	added, removed := diff(t.names, names)
	if len(added) == 0 && len(removed) == 0 {
		if fb.Event == "" {
			r.requestLocked(t, repeat)
		}
		return fb
	}
	r.changeLocked(t, Event{Stream: stream, Type: typ, Names: names, Wildcard: slices.Contains(names, "*"),
		Added: added, Removed: removed, Nonce: q.Nonce})
	return fb
}

// staleLocked records a SotW request the library drops because its nonce is not the
// latest: the server's subscription stays as it was, but what the request says about
// the client stands. Envoy sends its EDS unsubscribe after a cluster removal with the
// nonce of the last EDS response it had processed, which by then is not the latest, so
// the server keeps the old subscription while Envoy has dropped the endpoints; the next
// send of them is needed for warming, not redundant.
func (r *Recorder) staleLocked(stream int64, typ string, t *typeState, names []string, q SotWRequest) Event {
	r.flushStormLocked(stream, typ, t, true)
	e := Event{Event: EventStale, Stream: stream, Type: typ, Nonce: q.Nonce, LatestNonce: t.latest, Names: orEmpty(names), Version: q.VersionInfo}
	if q.Error != nil {
		e.Error = *q.Error
	}
	if len(names) > 0 || t.explicit {
		e.Added, e.Removed = diff(t.names, names)
		switch {
		case len(names) == 0:
			e.Kind = RequestUnsubscribe
		case len(e.Added) > 0 || len(e.Removed) > 0:
			e.Kind = RequestSubscribe
		default:
			e.Kind = RequestRepeat
		}
	}
	r.emitLocked(e)
	return e
}

// DeltaRequest is one DeltaDiscoveryRequest as the recorder needs it.
type DeltaRequest struct {
	// Node is the request's node ID ("" when it carries no node).
	Node                   string
	Subscribe, Unsubscribe []string
	Initial                map[string]string
	Nonce                  string
	Error                  *string
}

// Delta records a delta request: its nonce answers that send (once), and its subscribe
// and unsubscribe lists change the subscription. It returns the feedback event, or the
// zero Event.
func (r *Recorder) Delta(stream int64, typ string, q DeltaRequest) Event {
	return r.request(q.Node, func() Event { return r.deltaLocked(stream, typ, q) })
}

// deltaLocked is Delta with the lock held.
func (r *Recorder) deltaLocked(stream int64, typ string, q DeltaRequest) Event {
	t := r.typeLocked(stream, typ)
	fb := r.answerLocked(stream, typ, Feedback{Nonce: q.Nonce, Error: q.Error})
	if !t.known {
		r.firstRequestLocked(stream, typ, t, slices.Sorted(slices.Values(q.Subscribe)), "", q.Initial)
		return fb
	}
	// A plain ACK or NACK changes no subscription: nothing to work out. Envoy subscribes
	// EDS to every cluster by name, so rebuilding the subscription for each ACK would
	// cost O(N) per response.
	var added, removed, names []string
	if len(q.Subscribe) > 0 || len(q.Unsubscribe) > 0 {
		set := make(map[string]bool, len(t.names)+len(q.Subscribe))
		for _, n := range t.names {
			set[n] = true
		}
		for _, n := range q.Subscribe {
			set[n] = true
		}
		for _, n := range q.Unsubscribe {
			delete(set, n)
		}
		names = slices.Sorted(maps.Keys(set))
		added, removed = diff(t.names, names)
	}
	if len(added) == 0 && len(removed) == 0 {
		if fb.Event == "" && len(q.Subscribe) == 0 && len(q.Unsubscribe) == 0 {
			r.requestLocked(t, Event{Stream: stream, Type: typ, Kind: RequestRepeat, Names: t.names, Wildcard: t.wildcard, Nonce: q.Nonce})
		}
		return fb
	}
	// Names subscribed after a legacy wildcard leave it wildcard in delta (unlike SotW):
	// only unsubscribing "*" ends it (the protocol doc's example; the library's
	// UpdateResourceSubscriptions in pkg/server/stream/v3/subscription.go agrees).
	wildcard := (t.wildcard || slices.Contains(q.Subscribe, "*")) && !slices.Contains(q.Unsubscribe, "*")
	e := Event{Stream: stream, Type: typ, Names: names, Wildcard: wildcard, Added: added, Removed: removed, Nonce: q.Nonce}
	if IsOnDemand(r.mode, typ, false, added) {
		e.Kind = RequestOnDemand
	}
	r.changeLocked(t, e)
	return fb
}

// firstRequestLocked records the first request of a type on a stream: wildcard,
// initial, on-demand (IsOnDemand: a first CDS request naming clusters), or a resume that
// says what the client holds (delta: initial versions; SotW: the label, mapped to
// content when the server can).
func (r *Recorder) firstRequestLocked(stream int64, typ string, t *typeState, names []string, version string, initial map[string]string) {
	wildcard := len(names) == 0 || slices.Contains(names, "*")
	e := Event{Stream: stream, Type: typ, Kind: RequestInitial, Names: names, Wildcard: wildcard, Version: version,
		InitialVersions: initial, Added: slices.Clone(names), Missing: r.missingLocked(typ, names)}
	if len(names) == 0 {
		e.Kind = RequestWildcard
	}
	switch {
	case len(initial) > 0:
		e.Kind = RequestResume
	case IsOnDemand(r.mode, typ, true, names):
		e.Kind = RequestOnDemand
	case version != "" && r.mode == protocol.SotW:
		e.Kind = RequestResume
		if held, ok := r.model.labels.lookup(typ, version, names, wildcard); ok {
			e.Held = held
		} else {
			e.HeldUnknown = true
		}
	}
	r.requestLocked(t, e)
}

// changeLocked records a subscription change: an on-demand subscribe (Delta decided),
// a subscribe, or an unsubscribe when nothing is left.
func (r *Recorder) changeLocked(t *typeState, e Event) {
	switch {
	case e.Kind == RequestOnDemand:
	case len(e.Names) == 0 && !e.Wildcard:
		e.Kind = RequestUnsubscribe
	default:
		e.Kind = RequestSubscribe
	}
	e.Missing = r.missingLocked(e.Type, e.Added)
	r.requestLocked(t, e)
}

// requestLocked writes a request event; Names is the whole subscription after it. The
// first request event of a stream that names a node carries it (node), so a reader can
// tell K proxies' streams apart.
func (r *Recorder) requestLocked(t *typeState, e Event) {
	e.Event = EventRequest
	e.Names = orEmpty(slices.Clone(e.Names))
	if r.node != "" && r.model.Node(r.server, e.Stream) == "" {
		e.Node = r.node
	}
	r.flushStormLocked(e.Stream, e.Type, t, true)
	r.emitLocked(e)
}

// missingLocked lists the names the published state does not have. The spec expects a
// delta server to say so in removed_resources ("Knowing when a requested resource does
// not exist"); go-control-plane sends nothing, so a reader can show which happened.
func (r *Recorder) missingLocked(typ string, names []string) []string {
	var out []string
	for _, n := range names {
		has, ok := r.model.Published(typ, n)
		if !ok {
			return nil // nothing published yet: every name would look missing
		}
		if n != "*" && !has {
			out = append(out, n)
		}
	}
	return out
}

// diff returns the names of after missing from before (in after's order) and those of
// before missing from after (in before's order). A SotW EDS request names every cluster,
// so at 10,000 clusters a scan per name would cost 10^8 comparisons under the recorder's
// lock; past a few names the lookups go through sets.
func diff(before, after []string) (added, removed []string) {
	if slices.Equal(before, after) {
		// A SotW ACK repeats the names in the order it last sent them: one comparison
		// per name, no sets (the recorder's share of the protocol's O(N) ACK).
		return nil, nil
	}
	if len(before) <= smallList && len(after) <= smallList {
		for _, n := range after {
			if !slices.Contains(before, n) {
				added = append(added, n)
			}
		}
		for _, n := range before {
			if !slices.Contains(after, n) {
				removed = append(removed, n)
			}
		}
		return added, removed
	}
	inBefore, inAfter := nameSet(before), nameSet(after)
	for _, n := range after {
		if !inBefore[n] {
			added = append(added, n)
		}
	}
	for _, n := range before {
		if !inAfter[n] {
			removed = append(removed, n)
		}
	}
	return added, removed
}

// smallList is the length up to which a linear scan beats building a set.
const smallList = 16

func nameSet(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func orEmpty(names []string) []string {
	if names == nil {
		return []string{}
	}
	return names
}

// LabelBook maps SotW version labels to the content a client accepted under them, per
// type, so that a SotW resume (a first request carrying version_info) can be matched to
// what the client holds, as delta's initial_resource_versions are. A recorder learns the
// labels its clients ACK. Several recorders may share one book only when labels are
// durable across server instances (the same label always means the same content), as in
// `lab run`, whose restarted control plane republishes the same state under the same
// label; a book must not be shared where a restarted server reuses labels for other
// content (contour#6250).
type LabelBook struct {
	mu     sync.Mutex
	labels map[string]map[string]map[string]string // type -> label -> name -> hash
}

// NewLabelBook returns an empty book.
func NewLabelBook() *LabelBook { return &LabelBook{labels: map[string]map[string]map[string]string{}} }

// WithLabelBook shares book with other recorders (see LabelBook for when that is right).
func WithLabelBook(book *LabelBook) Option { return func(r *Recorder) { r.labels = book } }

// bookLimit bounds the labels remembered per type (a soak publishes thousands).
const bookLimit = 64

func (b *LabelBook) learn(typ, label string, res []Resource) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.labels[typ]
	if m == nil {
		m = map[string]map[string]string{}
		b.labels[typ] = m
	}
	content := m[label]
	if content == nil {
		if len(m) >= bookLimit {
			clear(m) // forget old labels wholesale: a resume to one is then "unknown"
		}
		content = map[string]string{}
		m[label] = content
	}
	for _, x := range res {
		content[x.Name] = x.Hash
	}
}

// Lookup returns what the clients of the book's recorders accepted under label for typ:
// name -> content hash (a copy); ok is false when the book does not know the label (never
// ACKed, or forgotten: it keeps bookLimit labels per type). A client that reports, per
// resource, the label of the response that last changed it (Envoy's config dump) is
// checked against it (experiments/clientview).
func (b *LabelBook) Lookup(typ, label string) (map[string]string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	content, ok := b.labels[typ][label]
	if !ok {
		return nil, false
	}
	return maps.Clone(content), true
}

// lookup returns what label meant for the names (all of them for a wildcard).
func (b *LabelBook) lookup(typ, label string, names []string, wildcard bool) (map[string]string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	content, ok := b.labels[typ][label]
	if !ok {
		return nil, false
	}
	out := map[string]string{}
	for n, h := range content {
		if wildcard || slices.Contains(names, n) {
			out[n] = h
		}
	}
	return out, true
}
