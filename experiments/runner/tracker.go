package runner

import (
	"context"
	"fmt"
	"sync"

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
		exchange: map[string][]ExchangeEvent{}, firstNack: map[string]string{}}
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
	close(t.changed)
	t.changed = make(chan struct{})
}

func (t *tracker) nackCount(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.nacks[key]
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
