package runner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// tracker is the runner's view of the recorder's events (through its observer hook): it
// feeds the one analysis.Accumulator, whose figures the runner's checks read, keeps the
// first exchanges of each step for the checkpoints, and lets the runner wait on
// conditions without re-reading xds.log, which grows fast in a NACK storm.
type tracker struct {
	acc *analysis.Accumulator
	mu  sync.Mutex
	// exchange keeps the first requests and sends of each step (for reconnect evidence).
	exchange map[string][]ExchangeEvent
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
	Kind            string            `json:"kind,omitempty"`
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
	return &tracker{acc: analysis.NewAccumulator(), exchange: map[string][]ExchangeEvent{}}
}

func (t *tracker) observe(e xdslog.Event) {
	t.mu.Lock()
	switch e.Event {
	case xdslog.EventRequest, xdslog.EventStale, xdslog.EventSend, xdslog.EventAck, xdslog.EventNack, xdslog.EventStreamOpen, xdslog.EventStreamClose:
		if len(t.exchange[e.Step]) < maxExchange {
			x := ExchangeEvent{Event: e.Event, Server: e.Server, Stream: e.Stream, Type: e.Type, Nonce: e.Nonce, Version: e.Version,
				Kind: e.Kind, Names: e.Names, InitialVersions: e.InitialVersions, Removed: e.Removed, SentVersion: e.SentVersion, AcceptedVersion: e.Accepted()}
			for _, r := range e.Resources {
				x.Resources = append(x.Resources, r.Name)
				if r.IsRedundant() {
					x.Redundant++
				}
			}
			t.exchange[e.Step] = append(t.exchange[e.Step], x)
		}
	}
	hook := t.hook
	t.mu.Unlock()
	if hook != nil {
		hook(e)
	}
	// Last: waiters wake on the accumulator's change, and must see the exchange too.
	t.acc.Observe(e)
}

// setHook installs fn as the event hook (nil removes it).
func (t *tracker) setHook(fn func(xdslog.Event)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.hook = fn
}

// nackCount is the NACKs of a step ("step") or of one type in it ("step/TYPE").
func (t *tracker) nackCount(key string) int {
	step, typ, one := strings.Cut(key, "/")
	st := t.acc.Step(step)
	switch {
	case st == nil:
		return 0
	case one:
		if f := st.Types[typ]; f != nil {
			return f.Nacks
		}
		return 0
	}
	return st.Total.Nacks
}

// sentTypes lists, sorted, the types the control plane sent in a step.
func (t *tracker) sentTypes(step string) []string {
	st := t.acc.Step(step)
	if st == nil {
		return nil
	}
	var out []string
	for typ, f := range st.Types {
		if f != nil && f.Responses > 0 {
			out = append(out, typ)
		}
	}
	slices.Sort(out)
	return out
}

// nackRate is NACKs per second between the step's first and last NACK.
func (t *tracker) nackRate(step string) float64 {
	if st := t.acc.Step(step); st != nil {
		return st.NackRate
	}
	return 0
}

func (t *tracker) firstNackError(step string) string {
	if st := t.acc.Step(step); st != nil && len(st.NackErrors) > 0 {
		return st.NackErrors[0]
	}
	return ""
}

func (t *tracker) sentVersionCount(server int, version string) int {
	return t.acc.Server(server).SentVersions[version]
}

// sentResources lists, sorted, every TYPE/name sent by server.
func (t *tracker) sentResources(server int) []string {
	return slices.Sorted(maps.Keys(t.acc.Server(server).SentResources))
}

// firstAcks maps each type to the sent version of its first ACK on server.
func (t *tracker) firstAcks(server int) map[string]string { return t.acc.Server(server).FirstAck }

func (t *tracker) streams(server int) (opened, closed int) {
	s := t.acc.Server(server)
	return s.StreamsOpened, s.StreamsClosed
}

func (t *tracker) exchangeOf(step string) []ExchangeEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]ExchangeEvent(nil), t.exchange[step]...)
}

// waitFor blocks until cond holds or ctx ends; cond is re-checked on every event and at
// least every poll interval (for conditions that also read the proxy).
func (t *tracker) waitFor(ctx context.Context, what string, cond func() (bool, error)) error {
	for {
		ch := t.acc.Changed()
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
