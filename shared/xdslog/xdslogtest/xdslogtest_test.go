package xdslogtest

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// fatalTB captures how a Log ends a test without ending this one.
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatalOf runs fn with a fatalTB and returns what it failed with ("" when it returned).
func fatalOf(t *testing.T, fn func(testing.TB)) string {
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(tb)
	}()
	<-done
	return tb.fatal
}

func TestEventsAreWhatTheRecorderWrote(t *testing.T) {
	var log Log
	assert.Nil(t, log.Events(t), "an empty log is no events")
	rec := xdslog.NewRecorder(&log, protocol.Delta)
	rec.StreamOpen(7, "127.0.0.1:1234")
	rec.StreamClose(7)
	ev := log.Events(t)
	require.Len(t, ev, 2)
	assert.Equal(t, xdslog.EventStreamOpen, ev[0].Event)
	assert.Equal(t, "127.0.0.1:1234", ev[0].Peer)
	assert.Equal(t, xdslog.EventStreamClose, ev[1].Event)
	for _, e := range ev {
		assert.Equal(t, int64(7), e.Stream)
		assert.Equal(t, protocol.Delta, e.Mode)
	}
	assert.Equal(t, 1, Count(ev, xdslog.EventStreamOpen))
	assert.Equal(t, 0, Count(ev, xdslog.EventSend))
}

func TestEventsFailOnAnUnreadableLine(t *testing.T) {
	var log Log
	xdslog.NewRecorder(&log, protocol.SotW).StreamOpen(1, "")
	_, _ = log.Write([]byte("{\"event\":\"not-an-event\"}\n"))
	msg := fatalOf(t, func(tb testing.TB) { log.Events(tb) })
	assert.Contains(t, msg, "1 unreadable lines")
	assert.Contains(t, msg, "not-an-event")
}

func TestWaitForEventsWrittenLater(t *testing.T) {
	var log Log
	rec := xdslog.NewRecorder(&log, protocol.SotW)
	go func() {
		for id := range int64(3) {
			rec.StreamOpen(id+1, "")
		}
	}()
	ev := log.WaitFor(t, 10*time.Second, "three streams", func(ev []xdslog.Event) bool {
		return Count(ev, xdslog.EventStreamOpen) == 3
	})
	assert.Len(t, ev, 3)
}

func TestWaitForFailsAtTheDeadline(t *testing.T) {
	var log Log
	xdslog.NewRecorder(&log, protocol.SotW).StreamOpen(1, "")
	start := time.Now()
	msg := fatalOf(t, func(tb testing.TB) {
		log.WaitFor(tb, 50*time.Millisecond, "a send", func(ev []xdslog.Event) bool { return Count(ev, xdslog.EventSend) > 0 })
	})
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
	assert.Equal(t, "waited 50ms for a send; the log has 1 events", msg)
}

func TestSelectByStepEventAndType(t *testing.T) {
	ev := []xdslog.Event{
		{Event: xdslog.EventSend, Type: "CDS"},
		{Step: "a", Event: xdslog.EventSend, Type: "CDS", Nonce: "1"},
		{Step: "a", Event: xdslog.EventSend, Type: "EDS", Nonce: "2"},
		{Step: "a", Event: xdslog.EventAck, Type: "CDS"},
		{Step: "b", Event: xdslog.EventSend, Type: "CDS"},
	}
	assert.Equal(t, ev[1:3], Select(ev, "a", xdslog.EventSend, ""), "any type, in log order")
	assert.Equal(t, ev[2:3], Select(ev, "a", xdslog.EventSend, "EDS"))
	assert.Equal(t, ev[:1], Select(ev, "", xdslog.EventSend, "CDS"), `"" is the events before any step`)
	assert.Empty(t, Select(ev, "c", xdslog.EventSend, ""))
}
