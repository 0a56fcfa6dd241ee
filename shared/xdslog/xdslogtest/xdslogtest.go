// Package xdslogtest is an xds.log in memory for tests: a recorder writes it from its
// goroutines while the test reads its events, waits for them with a deadline, counts and
// selects them. Every test that records into memory uses it, rather than a copy of its own.
package xdslogtest

import (
	"bytes"
	"testing"
	"time"

	"github.com/xds-workbench/lab/shared/syncbuf"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// poll is how often WaitFor reads the log again.
const poll = 5 * time.Millisecond

// Log is an xds.log in memory: give it to xdslog.NewRecorder. The zero value is empty
// and ready to use; a Log must not be copied after first use.
type Log struct{ syncbuf.Buffer }

// Events parses what was written so far; an empty log is no events. A line the reader
// cannot parse fails t: the recorder wrote it, and it must write valid lines only.
func (l *Log) Events(t testing.TB) []xdslog.Event {
	t.Helper()
	data := l.Bytes()
	if len(data) == 0 {
		return nil
	}
	ev, st, err := xdslog.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("read xds.log: %v", err)
	}
	if st.Skipped != 0 {
		t.Fatalf("the recorder wrote %d unreadable lines; first: %s", st.Skipped, st.FirstSkip)
	}
	return ev
}

// WaitFor reads the log until cond holds for its events and returns them; when within
// passes first it fails t, naming what it waited for.
func (l *Log) WaitFor(t testing.TB, within time.Duration, what string, cond func([]xdslog.Event) bool) []xdslog.Event {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		ev := l.Events(t)
		if cond(ev) {
			return ev
		}
		select {
		case <-deadline.C:
			t.Fatalf("waited %s for %s; the log has %d events", within, what, len(ev))
		case <-tick.C:
		}
	}
}

// Count is how many of ev are the event named event (xdslog.EventSend, ...).
func Count(ev []xdslog.Event, event string) int {
	n := 0
	for _, e := range ev {
		if e.Event == event {
			n++
		}
	}
	return n
}

// Select is ev's events named event (xdslog.EventSend, ...) in step (the recorder's
// SetStep label; "" for events recorded before any), of type typ ("" for any type), in
// log order.
func Select(ev []xdslog.Event, step, event, typ string) []xdslog.Event {
	var out []xdslog.Event
	for _, e := range ev {
		if e.Step == step && e.Event == event && (typ == "" || e.Type == typ) {
			out = append(out, e)
		}
	}
	return out
}
