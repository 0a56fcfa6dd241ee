package runner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/xds-workbench/lab/shared/xdslog"
)

// tracker watches the recorder's events (through its observer hook) so the runner can
// wait on protocol conditions without re-reading xds.log, which grows fast in a NACK storm.
type tracker struct {
	mu      sync.Mutex
	changed chan struct{}
	nacks   map[string]int // step/type -> NACKs
	opens   map[int]int    // server -> streams opened
	closes  map[int]int    // server -> streams closed
	// exchange keeps the first requests and sends of each step (for reconnect evidence).
	exchange  map[string][]ExchangeEvent
	firstNack map[string]string // step -> first NACK error
	// nackSpan is the first and last NACK time per step (the storm's rate).
	nackSpan map[string][2]time.Time
	// Per server: how many sends carried each version label, how many times each
	// TYPE/name was sent, and the sent version of the first ACK of each type.
	sentVersions map[int]map[string]int
	sentNames    map[int]map[string]int
	firstAck     map[int]map[string]string
	// hook, when set (fault tests), sees every event after the tracker did, under the
	// recorder's lock: it must be quick and must not call the tracker or the recorder.
	hook func(xdslog.Event)
}

// ExchangeEvent is a compact protocol event kept in a checkpoint.
type ExchangeEvent struct {
	Event           string            `json:"event"`
	Server          int               `json:"server"`
	Stream          int64             `json:"stream,omitempty"`
	Type            string            `json:"type,omitempty"`
	Nonce           string            `json:"nonce,omitempty"`
	Version         string            `json:"version,omitempty"`
	Names           []string          `json:"names,omitempty"`
	InitialVersions map[string]string `json:"initial_versions,omitempty"`
	Resources       []string          `json:"resources,omitempty"`
	Redundant       int               `json:"redundant,omitempty"`
	Removed         []string          `json:"removed,omitempty"`
	SentVersion     string            `json:"sent_version,omitempty"`
	AcceptedVersion string            `json:"accepted_version,omitempty"`
}

const maxExchange = 60

func newTracker() *tracker {
	return &tracker{changed: make(chan struct{}), nacks: map[string]int{}, opens: map[int]int{}, closes: map[int]int{},
		exchange: map[string][]ExchangeEvent{}, firstNack: map[string]string{}, nackSpan: map[string][2]time.Time{},
		sentVersions: map[int]map[string]int{}, sentNames: map[int]map[string]int{}, firstAck: map[int]map[string]string{}}
}

func (t *tracker) observe(e xdslog.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch e.Event {
	case xdslog.EventNack:
		t.nacks[e.Step+"/"+e.Type]++
		t.nacks[e.Step]++
		if _, ok := t.firstNack[e.Step]; !ok {
			t.firstNack[e.Step] = e.Error
		}
		span, ok := t.nackSpan[e.Step]
		if !ok {
			span[0] = e.TS
		}
		span[1] = e.TS
		t.nackSpan[e.Step] = span
	case xdslog.EventSend:
		if t.sentVersions[e.Server] == nil {
			t.sentVersions[e.Server] = map[string]int{}
			t.sentNames[e.Server] = map[string]int{}
		}
		// Bounded: version labels and resource names come from the scenario.
		t.sentVersions[e.Server][e.Version]++
		for _, r := range e.Resources {
			t.sentNames[e.Server][e.Type+"/"+r.Name]++
		}
	case xdslog.EventAck:
		if t.firstAck[e.Server] == nil {
			t.firstAck[e.Server] = map[string]string{}
		}
		if _, ok := t.firstAck[e.Server][e.Type]; !ok {
			t.firstAck[e.Server][e.Type] = e.SentVersion
		}
	case xdslog.EventStreamOpen:
		t.opens[e.Server]++
	case xdslog.EventStreamClose:
		t.closes[e.Server]++
	}
	switch e.Event {
	case xdslog.EventRequest, xdslog.EventSend, xdslog.EventAck, xdslog.EventNack, xdslog.EventStreamOpen, xdslog.EventStreamClose:
		if len(t.exchange[e.Step]) < maxExchange {
			x := ExchangeEvent{Event: e.Event, Server: e.Server, Stream: e.Stream, Type: e.Type, Nonce: e.Nonce, Version: e.Version,
				Names: e.Names, InitialVersions: e.InitialVersions, Removed: e.Removed, SentVersion: e.SentVersion, AcceptedVersion: e.Accepted()}
			for _, r := range e.Resources {
				x.Resources = append(x.Resources, r.Name)
				if r.IsRedundant() {
					x.Redundant++
				}
			}
			t.exchange[e.Step] = append(t.exchange[e.Step], x)
		}
	}
	if t.hook != nil {
		t.hook(e)
	}
	close(t.changed)
	t.changed = make(chan struct{})
}

// setHook installs fn as the event hook (nil removes it).
func (t *tracker) setHook(fn func(xdslog.Event)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.hook = fn
}

func (t *tracker) nackCount(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.nacks[key]
}

// nackRate is NACKs per second between the step's first and last NACK (0 with fewer
// than two).
func (t *tracker) nackRate(step string) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, span := t.nacks[step], t.nackSpan[step]
	d := span[1].Sub(span[0]).Seconds()
	if n < 2 || d <= 0 {
		return 0
	}
	return float64(n-1) / d
}

func (t *tracker) sentVersionCount(server int, version string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sentVersions[server][version]
}

// sentResources lists, sorted, every TYPE/name sent by server.
func (t *tracker) sentResources(server int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Sorted(maps.Keys(t.sentNames[server]))
}

// firstAcks maps each type to the sent version of its first ACK on server.
func (t *tracker) firstAcks(server int) map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.firstAck[server])
}

func (t *tracker) streams(server int) (opened, closed int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.opens[server], t.closes[server]
}

func (t *tracker) exchangeOf(step string) []ExchangeEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]ExchangeEvent(nil), t.exchange[step]...)
}

func (t *tracker) firstNackError(step string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.firstNack[step]
}

// waitFor blocks until cond holds or ctx ends; cond is re-checked on every event and at
// least every poll interval (for conditions that also read the proxy).
func (t *tracker) waitFor(ctx context.Context, what string, cond func() (bool, error)) error {
	for {
		t.mu.Lock()
		ch := t.changed
		t.mu.Unlock()
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-pollTick():
		}
	}
}
