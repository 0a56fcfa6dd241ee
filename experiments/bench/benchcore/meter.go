package benchcore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// TypeTally is what one step sent for one resource type.
type TypeTally struct {
	Responses int   `json:"responses"`
	Resources int   `json:"resources"`
	Redundant int   `json:"redundant"`
	Removed   int   `json:"removed,omitempty"`
	Bytes     int64 `json:"bytes"`
}

type streamType struct {
	stream int64
	typ    string
}

// ackKey is one version of one type ACKed on one stream.
type ackKey struct {
	stream  int64
	typ     string
	version string
}

// Meter is the recorder's observer: it feeds the one analysis.Accumulator (the step
// figures come from there) and keeps what the bench waits on, so it can wait on
// convergence without re-reading a log that reaches hundreds of megabytes at N = 10,000.
// It runs under the recorder's lock, so it only counts; anything slow happens in the
// waiters.
type Meter struct {
	acc     *analysis.Accumulator
	mu      sync.Mutex
	changed chan struct{}

	open   map[int64]bool
	opened int
	// stuck are the streams of the stuck clients: the next stuckToCome streams to open
	// after ExpectStuck (they connect once the initial state is in place, when no other
	// client opens a stream). Their events reach no total and no wait of the others;
	// stuckSends counts the responses the server began to send them and stuckBytes
	// their protobuf bytes.
	stuck       map[int64]bool
	stuckToCome int
	stuckSends  int
	stuckBytes  int
	requested   map[int64]map[string]bool
	// node is the node ID each stream's first request named (Envoy's node.id): how K
	// proxies' streams are told apart.
	node map[int64]string
	// acked is, per stream and type, the sent version of the last ACKed response;
	// firstAck is when each version of each type was first ACKed on a stream (the moment
	// the client ran it: a later response at the same version, such as a SotW EDS answer
	// to a wider subscription, does not move it); lastSend is when each step's last send
	// was.
	acked    map[streamType]string
	firstAck map[ackKey]time.Time
	lastSend map[string]time.Time
	// dropped is, per stream and type, the step in which the client last unsubscribed
	// from each name (a request or a stale request that removed it), and when.
	dropped map[streamType]map[string]dropSeen
}

type dropSeen struct {
	step string
	at   time.Time
}

func NewMeter() *Meter {
	return &Meter{
		acc:       newBenchAccumulator(),
		changed:   make(chan struct{}),
		open:      map[int64]bool{},
		stuck:     map[int64]bool{},
		requested: map[int64]map[string]bool{},
		node:      map[int64]string{},
		acked:     map[streamType]string{},
		firstAck:  map[ackKey]time.Time{},
		lastSend:  map[string]time.Time{},
		dropped:   map[streamType]map[string]dropSeen{},
	}
}

// Observe is the xdslog.WithObserver hook. Times are taken here (monotonic clock), after
// the recorder has written the line: for a send that is the moment the response is
// handed to gRPC, since the library records immediately before sending.
func (m *Meter) Observe(e xdslog.Event) {
	if m.observeStuck(e) {
		return
	}
	now := time.Now()
	m.acc.Observe(e)
	m.mu.Lock()
	defer m.mu.Unlock()
	switch e.Event {
	case xdslog.EventStreamOpen:
		m.open[e.Stream] = true
		m.opened++
	case xdslog.EventStreamClose:
		delete(m.open, e.Stream)
		delete(m.requested, e.Stream)
		delete(m.node, e.Stream)
		for k := range m.dropped {
			if k.stream == e.Stream {
				delete(m.dropped, k)
			}
		}
		for k := range m.acked {
			if k.stream == e.Stream {
				delete(m.acked, k)
			}
		}
		for k := range m.firstAck {
			if k.stream == e.Stream {
				delete(m.firstAck, k)
			}
		}
	case xdslog.EventRequest:
		if m.requested[e.Stream] == nil {
			m.requested[e.Stream] = map[string]bool{}
		}
		m.requested[e.Stream][e.Type] = true
		if e.Node != "" {
			m.node[e.Stream] = e.Node
		}
		m.drop(e, now)
	case xdslog.EventStale:
		// The library ignores it, but the client has let go of what it removed.
		m.drop(e, now)
	case xdslog.EventSend:
		m.lastSend[e.Step] = now
	case xdslog.EventAck:
		m.acked[streamType{e.Stream, e.Type}] = e.SentVersion
		k := ackKey{e.Stream, e.Type, e.SentVersion}
		if _, ok := m.firstAck[k]; !ok {
			m.firstAck[k] = now
		}
	case xdslog.EventNack, xdslog.EventUnmatched:
	default:
		return
	}
	close(m.changed)
	m.changed = make(chan struct{})
}

// drop records the names a request removed from the client's subscription.
func (m *Meter) drop(e xdslog.Event, now time.Time) {
	if len(e.Removed) == 0 {
		return
	}
	k := streamType{e.Stream, e.Type}
	if m.dropped[k] == nil {
		m.dropped[k] = map[string]dropSeen{}
	}
	for _, n := range e.Removed {
		m.dropped[k][n] = dropSeen{step: e.Step, at: now}
	}
}

// wait blocks until cond (called with the meter locked) holds or ctx ends.
func (m *Meter) wait(ctx context.Context, what string, cond func() bool) error {
	_, err := WaitChange(ctx, what, 0, func() (bool, <-chan struct{}) {
		m.mu.Lock()
		defer m.mu.Unlock()
		return cond(), m.changed
	})
	return err
}

// WaitSubscribed waits until k streams are open and each has asked for clusters, the
// first thing Envoy (and the simulated clients) request.
func (m *Meter) WaitSubscribed(ctx context.Context, k int) error {
	return m.wait(ctx, fmt.Sprintf("%d client stream(s) to request CDS", k), func() bool {
		if len(m.open) < k {
			return false
		}
		n := 0
		for s := range m.open {
			if m.requested[s]["CDS"] {
				n++
			}
		}
		return n >= k
	})
}

// ExpectStuck says the next k streams to open are stuck clients'
// (configRun.startStuck connects them after the initial state, when no other client
// opens a stream).
func (m *Meter) ExpectStuck(k int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stuckToCome = k
}

// observeStuck counts e if it is a stuck client's and reports whether it was.
func (m *Meter) observeStuck(e xdslog.Event) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.Event == xdslog.EventStreamOpen && m.stuckToCome > 0 {
		m.stuckToCome--
		m.stuck[e.Stream] = true
		return true
	}
	if !m.stuck[e.Stream] {
		return false
	}
	if e.Event == xdslog.EventSend {
		m.stuckSends++
		m.stuckBytes += e.Bytes
	}
	return true
}

// SendsToStuck is how many responses the server began to send to stuck clients, and
// their bytes.
func (m *Meter) SendsToStuck() (sends, bytes int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stuckSends, m.stuckBytes
}

// WaitNodesSubscribed waits until every node has an open stream that asked for typ
// (Envoy: CDS; grpc-go: LDS, its first subscription).
func (m *Meter) WaitNodesSubscribed(ctx context.Context, nodes []string, typ string) error {
	return m.wait(ctx, fmt.Sprintf("%d proxies (%s) to request %s", len(nodes), strings.Join(nodes, ", "), typ), func() bool {
		for _, n := range nodes {
			s, ok := m.streamOfLocked(n)
			if !ok || !m.requested[s][typ] {
				return false
			}
		}
		return true
	})
}

// Want is what one client owes a step: an ACK of each of types at its version in
// versions, and an unsubscribe in the step from every name in dropped (type -> names).
type Want struct {
	Versions map[string]string
	Types    []string
	Dropped  map[string][]string
}

func (w Want) String() string {
	what := make([]string, len(w.Types))
	for i, t := range w.Types {
		what[i] = t + "@" + w.Versions[t]
	}
	s := fmt.Sprintf("ACK %v", what)
	if len(w.Dropped) > 0 {
		s += fmt.Sprintf(" and unsubscribe from %v", w.Dropped)
	}
	return s
}

// convergedLocked reports whether stream s has done what w asks in step, and when the
// last of it was observed: the first ACK of each type's awaited version or, with
// nothing to ACK, the last awaited unsubscribe (zero when w asks for nothing).
func (m *Meter) convergedLocked(s int64, step string, w Want) (time.Time, bool) {
	var last, lastDrop time.Time
	for _, t := range w.Types {
		v := w.Versions[t]
		if m.acked[streamType{s, t}] != v {
			return time.Time{}, false
		}
		if at := m.firstAck[ackKey{s, t, v}]; at.After(last) {
			last = at
		}
	}
	for t, names := range w.Dropped {
		for _, n := range names {
			d, ok := m.dropped[streamType{s, t}][n]
			if !ok || d.step != step {
				return time.Time{}, false
			}
			if d.at.After(lastDrop) {
				lastDrop = d.at
			}
		}
	}
	if len(w.Types) == 0 {
		last = lastDrop
	}
	return last, true
}

// nackedLocked is the first NACK message of step, if the step has a NACK. The bench
// publishes only valid states, so a NACK is a failure, and waiting for the deadline
// would only hide it.
func (m *Meter) nackedLocked(step string) (string, bool) {
	if st := m.acc.Step(step); st != nil && st.Total.Nacks > 0 {
		return st.NackErrors[0], true
	}
	return "", false
}

// WaitConverged waits until k streams are open and every one has done what w asks in
// step; it returns when the last of it was observed. A NACK in step ends the wait at
// once.
func (m *Meter) WaitConverged(ctx context.Context, step string, k int, w Want) (time.Time, error) {
	var (
		last    time.Time
		nackErr string
		nacked  bool
	)
	err := m.wait(ctx, fmt.Sprintf("%d client(s) to %s", k, w), func() bool {
		if nackErr, nacked = m.nackedLocked(step); nacked {
			return true
		}
		if len(m.open) < k {
			return false
		}
		last = time.Time{}
		for s := range m.open {
			at, ok := m.convergedLocked(s, step, w)
			if !ok {
				return false
			}
			if at.After(last) {
				last = at
			}
		}
		return true
	})
	if err == nil && nacked {
		return time.Time{}, fmt.Errorf("a client NACKed in step %s: %s", step, nackErr)
	}
	if err == nil && last.IsZero() {
		last = time.Now() // nothing awaited: converged as soon as asked
	}
	return last, err
}

// nodeConverged is when one proxy ran a step (its stream ACKed every awaited type at
// its version and let go of what went away), and on which stream.
type nodeConverged struct {
	Stream int64
	At     time.Time
}

// WaitNodes waits until every node in wants has an open stream (its newest, should it
// have reconnected) that did what its want asks in step, and returns for each node when
// that was observed. Each node's versions are its own publisher's. onConverged (when not
// nil) is called once per node as soon as the wait sees it converge, with the meter
// locked: it must only signal. A NACK in step ends the wait at once.
func (m *Meter) WaitNodes(ctx context.Context, step string, wants map[string]Want, onConverged func(node string)) (map[string]nodeConverged, error) {
	told := map[string]bool{}
	nodes := slices.Sorted(maps.Keys(wants))
	var (
		out     map[string]nodeConverged
		nackErr string
		nacked  bool
		missing []string
	)
	desc := func() string {
		d := fmt.Sprintf("%d proxies to run step %s", len(nodes), step)
		if len(nodes) > 0 {
			d += " (" + wants[nodes[0]].String() + ")"
		}
		return d
	}
	err := m.wait(ctx, desc(), func() bool {
		if nackErr, nacked = m.nackedLocked(step); nacked {
			return true
		}
		out = make(map[string]nodeConverged, len(nodes))
		missing = missing[:0]
		for _, n := range nodes {
			s, ok := m.streamOfLocked(n)
			if !ok {
				missing = append(missing, n+" (no stream)")
				continue
			}
			at, ok := m.convergedLocked(s, step, wants[n])
			if !ok {
				missing = append(missing, n)
				continue
			}
			out[n] = nodeConverged{Stream: s, At: at}
			if onConverged != nil && !told[n] {
				told[n] = true
				onConverged(n)
			}
		}
		return len(missing) == 0
	})
	if err != nil {
		return nil, fmt.Errorf("%w; still waiting for %s", err, strings.Join(missing, ", "))
	}
	if nacked {
		return nil, fmt.Errorf("a proxy NACKed in step %s: %s", step, nackErr)
	}
	now := time.Now()
	for n, c := range out {
		if c.At.IsZero() {
			c.At = now // nothing awaited: converged as soon as asked
			out[n] = c
		}
	}
	return out, nil
}

// streamOfLocked is node's newest open stream.
func (m *Meter) streamOfLocked(node string) (int64, bool) {
	var (
		best  int64
		found bool
	)
	for s := range m.open {
		if m.node[s] == node && (!found || s > best) {
			best, found = s, true
		}
	}
	return best, found
}

// StepView is a copy of one step's tallies.
type StepView struct {
	ByType    map[string]TypeTally
	LastSend  time.Time
	Acks      int
	Nacks     int
	NackError string
	Unmatched int
}

// Step returns a copy of one step's tallies.
func (m *Meter) Step(name string) StepView {
	v := StepView{ByType: map[string]TypeTally{}}
	m.mu.Lock()
	v.LastSend = m.lastSend[name]
	m.mu.Unlock()
	st := m.acc.Step(name)
	if st == nil {
		return v
	}
	for t, f := range st.Types {
		v.ByType[t] = TypeTally{Responses: f.Responses, Resources: f.Resources, Redundant: f.Redundant, Removed: f.RemovedExplicit, Bytes: int64(f.Bytes)}
	}
	v.Acks, v.Nacks, v.Unmatched = st.Total.Acks, st.Total.Nacks, st.Total.Unmatched
	if len(st.NackErrors) > 0 {
		v.NackError = st.NackErrors[0]
	}
	return v
}

// StreamsOpened is how many streams opened since the meter started.
func (m *Meter) StreamsOpened() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.opened
}

// newBenchAccumulator is the one tally without the per-step copy of what the client holds
// (the bench reads counts, not version tables; the copy is O(N) per change).
func newBenchAccumulator() *analysis.Accumulator {
	a := analysis.NewAccumulator()
	a.SkipHeldVersions()
	return a
}
