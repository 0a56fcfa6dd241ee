package bench

import (
	"context"
	"fmt"
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

// meter is the recorder's observer: it feeds the one analysis.Accumulator (the step
// figures come from there) and keeps what the bench waits on, so it can wait on
// convergence without re-reading a log that reaches hundreds of megabytes at N = 10,000.
// It runs under the recorder's lock, so it only counts; anything slow happens in the
// waiters.
type meter struct {
	acc     *analysis.Accumulator
	mu      sync.Mutex
	changed chan struct{}

	open      map[int64]bool
	opened    int
	requested map[int64]map[string]bool
	// acked is, per stream and type, the sent version of the last ACKed response and
	// when the ACK was observed; lastSend is when each step's last send was.
	acked    map[streamType]ackSeen
	lastSend map[string]time.Time
	// dropped is, per stream and type, the step in which the client last unsubscribed
	// from each name (a request or a stale request that removed it).
	dropped map[streamType]map[string]string
}

type ackSeen struct {
	version string
	at      time.Time
}

func newMeter() *meter {
	return &meter{
		acc:       newBenchAccumulator(),
		changed:   make(chan struct{}),
		open:      map[int64]bool{},
		requested: map[int64]map[string]bool{},
		acked:     map[streamType]ackSeen{},
		lastSend:  map[string]time.Time{},
		dropped:   map[streamType]map[string]string{},
	}
}

// observe is the xdslog.WithObserver hook. Times are taken here (monotonic clock), after
// the recorder has written the line: for a send that is the moment the response is
// handed to gRPC, since the library records immediately before sending.
func (m *meter) observe(e xdslog.Event) {
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
		for k := range m.dropped {
			if k.stream == e.Stream {
				delete(m.dropped, k)
			}
		}
	case xdslog.EventRequest:
		if m.requested[e.Stream] == nil {
			m.requested[e.Stream] = map[string]bool{}
		}
		m.requested[e.Stream][e.Type] = true
		m.drop(e)
	case xdslog.EventStale:
		// The library ignores it, but the client has let go of what it removed.
		m.drop(e)
	case xdslog.EventSend:
		m.lastSend[e.Step] = now
	case xdslog.EventAck:
		m.acked[streamType{e.Stream, e.Type}] = ackSeen{version: e.SentVersion, at: now}
	case xdslog.EventNack, xdslog.EventUnmatched:
	default:
		return
	}
	close(m.changed)
	m.changed = make(chan struct{})
}

// drop records the names a request removed from the client's subscription.
func (m *meter) drop(e xdslog.Event) {
	if len(e.Removed) == 0 {
		return
	}
	k := streamType{e.Stream, e.Type}
	if m.dropped[k] == nil {
		m.dropped[k] = map[string]string{}
	}
	for _, n := range e.Removed {
		m.dropped[k][n] = e.Step
	}
}

// wait blocks until cond (called with the meter locked) holds or ctx ends.
func (m *meter) wait(ctx context.Context, what string, cond func() bool) error {
	for {
		m.mu.Lock()
		ok := cond()
		ch := m.changed
		m.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

// waitSubscribed waits until k streams are open and each has asked for clusters, the
// first thing Envoy (and the simulated clients) request.
func (m *meter) waitSubscribed(ctx context.Context, k int) error {
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

// waitConverged waits until k streams are open and every one has ACKed a response of
// each of types at its version in versions, and has unsubscribed in this step from every
// name in dropped (type -> names); it returns when the last of those ACKs was observed.
// A NACK in step ends the wait at once: the bench publishes only valid states, so a NACK
// is a failure, and waiting for the deadline would only hide it.
func (m *meter) waitConverged(ctx context.Context, step string, k int, versions map[string]string, types []string, dropped map[string][]string) (time.Time, error) {
	var (
		last    time.Time
		nackErr string
	)
	what := make([]string, len(types))
	for i, t := range types {
		what[i] = t + "@" + versions[t]
	}
	desc := fmt.Sprintf("%d client(s) to ACK %v", k, what)
	if len(dropped) > 0 {
		desc += fmt.Sprintf(" and unsubscribe from %v", dropped)
	}
	err := m.wait(ctx, desc, func() bool {
		if st := m.acc.Step(step); st != nil && st.Total.Nacks > 0 {
			nackErr = st.NackErrors[0]
			return true
		}
		if len(m.open) < k {
			return false
		}
		last = time.Time{}
		for s := range m.open {
			for _, t := range types {
				a, ok := m.acked[streamType{s, t}]
				if !ok || a.version != versions[t] {
					return false
				}
				if a.at.After(last) {
					last = a.at
				}
			}
			for t, names := range dropped {
				for _, n := range names {
					if m.dropped[streamType{s, t}][n] != step {
						return false
					}
				}
			}
		}
		return true
	})
	if err == nil && nackErr != "" {
		return time.Time{}, fmt.Errorf("a client NACKed in step %s: %s", step, nackErr)
	}
	if err == nil && last.IsZero() {
		last = time.Now() // nothing to ACK: converged when the unsubscribes were seen
	}
	return last, err
}

// stepView is a copy of one step's tallies.
type stepView struct {
	ByType    map[string]TypeTally
	LastSend  time.Time
	Acks      int
	Nacks     int
	NackError string
	Unmatched int
}

// step returns a copy of one step's tallies.
func (m *meter) step(name string) stepView {
	v := stepView{ByType: map[string]TypeTally{}}
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

// streamsOpened is how many streams opened since the meter started.
func (m *meter) streamsOpened() int {
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
