package ondemand

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// odEvent is the part of an xds.log event the on-demand sequence reads.
type odEvent struct {
	at        time.Time
	event     string
	typ       string
	added     []string
	resources int
	notFound  int
	removed   int
	bytes     int64
	err       string
}

// odTrace is the recorder's observer for the on-demand sequence: every request, send,
// ACK and NACK in order, so a step's figures are the events since its mark. It runs
// under the recorder's lock and only appends.
type odTrace struct {
	mu      sync.Mutex
	events  []odEvent
	changed chan struct{}
}

func newODTrace() *odTrace { return &odTrace{changed: make(chan struct{})} }

func (t *odTrace) observe(e xdslog.Event) {
	switch e.Event {
	case xdslog.EventRequest, xdslog.EventSend, xdslog.EventAck, xdslog.EventNack:
	default:
		return
	}
	ev := odEvent{at: e.TS, event: e.Event, typ: e.Type, added: e.Added, resources: len(e.Resources), removed: len(e.Removed), bytes: int64(e.Bytes), err: e.Error}
	if ev.at.IsZero() {
		ev.at = time.Now()
	}
	for _, r := range e.Resources {
		if r.NotFound {
			ev.notFound++
		}
	}
	t.mu.Lock()
	t.events = append(t.events, ev)
	close(t.changed)
	t.changed = make(chan struct{})
	t.mu.Unlock()
}

// mark is the position of the next event.
func (t *odTrace) mark() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.events)
}

// since returns the events from mark on.
func (t *odTrace) since(mark int) []odEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.events[mark:])
}

// wait blocks until cond holds for the events since mark, ctx ends, or (when quiet > 0)
// no event arrived for quiet; it returns whether cond held.
func (t *odTrace) wait(ctx context.Context, mark int, quiet time.Duration, what string, cond func([]odEvent) bool) (bool, error) {
	return benchcore.WaitChange(ctx, what, quiet, func() (bool, <-chan struct{}) {
		t.mu.Lock()
		defer t.mu.Unlock()
		return cond(t.events[mark:]), t.changed
	})
}

// converged reports whether every type sent in evs has an ACK after its last send, and
// returns the last such ACK's time. No send: not converged.
func converged(evs []odEvent) (time.Time, bool) {
	lastSend := map[string]int{}
	for i, e := range evs {
		if e.event == xdslog.EventSend {
			lastSend[e.typ] = i
		}
	}
	if len(lastSend) == 0 {
		return time.Time{}, false
	}
	var last time.Time
	for typ, i := range lastSend {
		j := slices.IndexFunc(evs[i+1:], func(e odEvent) bool { return e.typ == typ && e.event == xdslog.EventAck })
		if j < 0 {
			return time.Time{}, false
		}
		if at := evs[i+1+j].at; at.After(last) {
			last = at
		}
	}
	return last, true
}

// nacked returns the first NACK's error in evs ("" when none).
func nacked(evs []odEvent) string {
	for _, e := range evs {
		if e.event == xdslog.EventNack {
			return e.typ + ": " + e.err
		}
	}
	return ""
}

// Sent is what the control plane sent over a window of the on-demand sequence, from
// the recorder's send events (Bytes: the responses' encoded size).
type Sent struct {
	Responses int            `json:"responses"`
	Resources int            `json:"resources"`
	NotFound  int            `json:"not_found,omitempty"`
	Removed   int            `json:"removed,omitempty"`
	Bytes     int64          `json:"bytes"`
	ByType    map[string]int `json:"resources_by_type,omitempty"`
	// Subscribes counts the names Envoy's requests added in the window, by type;
	// Subscribed are the names (in xds.log, not in bench.json).
	Subscribes map[string]int      `json:"subscribes,omitempty"`
	Subscribed map[string][]string `json:"-"`
}

func sentIn(evs []odEvent) Sent {
	var s Sent
	for _, e := range evs {
		switch e.event {
		case xdslog.EventSend:
			s.Responses++
			s.Resources += e.resources
			s.NotFound += e.notFound
			s.Removed += e.removed
			s.Bytes += e.bytes
			if e.resources > 0 {
				if s.ByType == nil {
					s.ByType = map[string]int{}
				}
				s.ByType[e.typ] += e.resources
			}
		case xdslog.EventRequest:
			if len(e.added) > 0 {
				if s.Subscribed == nil {
					s.Subscribed = map[string][]string{}
				}
				s.Subscribed[e.typ] = append(s.Subscribed[e.typ], e.added...)
				if s.Subscribes == nil {
					s.Subscribes = map[string]int{}
				}
				s.Subscribes[e.typ] += len(e.added)
			}
		}
	}
	return s
}
