package xdslog

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/protocol"
)

// fakeClock advances one millisecond per reading.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

func newTestRecorder(mode protocol.Mode) (*Recorder, *bytes.Buffer) {
	var buf bytes.Buffer
	clk := &fakeClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	return NewRecorder(&buf, mode, WithClock(clk.now)), &buf
}

func read(t *testing.T, buf *bytes.Buffer) []Event {
	t.Helper()
	ev, st, err := Read(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Zero(t, st.Skipped)
	return ev
}

func res(name, hash string) []Resource { return []Resource{{Name: name, Version: "v", Hash: hash}} }

func msg(s string) *string { return &s }

func TestAckNackAndRedundancy(t *testing.T) {
	t.Parallel()
	r, buf := newTestRecorder(protocol.SotW)
	r.SetStep("s1")
	r.StreamOpen(1, "")
	r.SotW(1, "CDS", SotWRequest{})
	r.Send(1, "CDS", "1", "1", res("inventory", "h1"), nil, 100)
	ack := r.Feedback(1, "CDS", Feedback{Nonce: "1", ClientVersion: "1"})
	assert.Equal(t, EventAck, ack.Event)
	assert.Equal(t, "1", ack.SentVersion)
	assert.Equal(t, "1", ack.Accepted())
	// Each clock reading advances 1 ms: the send is stamped, then the ACK arrives.
	assert.InDelta(t, 1.0, ack.Latency(), 0.001, "latency is measured from the send to the ACK")

	// The same content again is redundant; new content is not.
	r.Send(1, "CDS", "2", "2", res("inventory", "h1"), nil, 100)
	r.Send(1, "CDS", "3", "3", res("inventory", "h2"), nil, 100)
	ev := read(t, buf)
	sends := filterEv(ev, EventSend)
	require.Len(t, sends, 3)
	assert.False(t, sends[0].Resources[0].IsRedundant())
	assert.True(t, sends[1].Resources[0].IsRedundant())
	assert.False(t, sends[2].Resources[0].IsRedundant())

	// NACKs of the same content count repeats; the accepted table does not move.
	n1 := r.Feedback(1, "CDS", Feedback{Nonce: "3", ClientVersion: "1", Error: msg("bad")})
	r.Send(1, "CDS", "4", "3", res("inventory", "h2"), nil, 100)
	n2 := r.Feedback(1, "CDS", Feedback{Nonce: "4", ClientVersion: "1", Error: msg("bad")})
	assert.Equal(t, EventNack, n1.Event)
	assert.Equal(t, 1, n1.Repeat)
	assert.Equal(t, 2, n2.Repeat)
	assert.Equal(t, "3", n2.SentVersion)
	assert.Equal(t, "1", n2.Accepted(), "the SotW client's version_info: the last good one")
	assert.Equal(t, "bad", n2.Error)
	st := r.Status()
	require.Len(t, st, 1)
	assert.Equal(t, Accepted{Version: "v", Hash: "h1"}, st[0].Accepted["CDS"]["inventory"])
	assert.Equal(t, "1", st[0].Versions["CDS"])

	// Stream close: the never-answered send (nonce 2) is dropped; state is cleared.
	r.StreamClose(1)
	ev = read(t, buf)
	closes := filterEv(ev, EventStreamClose)
	require.Len(t, closes, 1)
	require.NotNil(t, closes[0].Dropped)
	assert.Equal(t, 1, *closes[0].Dropped)
	assert.Empty(t, r.Status())
	for _, e := range ev {
		assert.Equal(t, "s1", e.Step)
		assert.Equal(t, protocol.SotW, e.Mode)
		assert.Equal(t, 1, e.Server)
	}
}

func TestUnmatchedIsNeverAnAck(t *testing.T) {
	t.Parallel()
	r, buf := newTestRecorder(protocol.SotW)
	r.StreamOpen(1, "")
	r.Send(1, "LDS", "1", "1", res("l", "h"), nil, 10)
	e := r.Feedback(1, "CDS", Feedback{Nonce: "1", ClientVersion: "1"})
	assert.Equal(t, EventUnmatched, e.Event, "nonce 1 was sent for LDS, not CDS")
	e = r.Feedback(2, "LDS", Feedback{Nonce: "1", ClientVersion: "1"})
	assert.Equal(t, EventUnmatched, e.Event, "nonce 1 of stream 1 is not nonce 1 of stream 2")
	assert.Empty(t, filterEv(read(t, buf), EventAck))
}

func TestSotWFullStateAndDeltaRemovals(t *testing.T) {
	t.Parallel()
	s, _ := newTestRecorder(protocol.SotW)
	s.Send(1, "CDS", "1", "1", append(res("a", "ha"), res("b", "hb")...), nil, 10)
	s.Feedback(1, "CDS", Feedback{Nonce: "1", ClientVersion: "1"})
	s.Send(1, "CDS", "2", "2", res("a", "ha"), nil, 10)
	s.Feedback(1, "CDS", Feedback{Nonce: "2", ClientVersion: "2"})
	assert.NotContains(t, s.Status()[0].Accepted["CDS"], "b", "SotW CDS: absence is removal")
	s.Send(1, "EDS", "3", "2", append(res("a", "ea"), res("b", "eb")...), nil, 10)
	s.Feedback(1, "EDS", Feedback{Nonce: "3", ClientVersion: "2"})
	s.Send(1, "EDS", "4", "3", res("a", "ea2"), nil, 10)
	s.Feedback(1, "EDS", Feedback{Nonce: "4", ClientVersion: "3"})
	assert.Contains(t, s.Status()[0].Accepted["EDS"], "b", "SotW EDS: absence removes nothing")

	d, _ := newTestRecorder(protocol.Delta)
	d.Delta(1, "CDS", DeltaRequest{Initial: map[string]string{"a": "ha"}})
	d.Send(1, "CDS", "1", "2", res("a", "ha"), nil, 10)
	d.Send(1, "CDS", "2", "3", nil, []string{"a"}, 10)
	ack := d.Feedback(1, "CDS", Feedback{Nonce: "2"})
	assert.Equal(t, "3", ack.Accepted(), "delta: the accepted label is the sent one")
	assert.NotContains(t, d.Status()[0].Accepted["CDS"], "a", "delta: removed_resources removes")
}

func TestDeltaInitialVersionsCountAsAccepted(t *testing.T) {
	t.Parallel()
	r, buf := newTestRecorder(protocol.Delta)
	r.Delta(1, "EDS", DeltaRequest{Subscribe: []string{"inventory"}, Initial: map[string]string{"inventory": "h1"}})
	r.Send(1, "EDS", "1", "4", res("inventory", "h1"), nil, 10)
	sends := filterEv(read(t, buf), EventSend)
	require.Len(t, sends, 1)
	assert.True(t, sends[0].Resources[0].IsRedundant(), "the client declared it already runs h1")

	r.Delta(1, "EDS", DeltaRequest{Subscribe: []string{"other"}, Unsubscribe: []string{"inventory"}})
	reqs := filterEv(read(t, buf), EventRequest)
	require.Len(t, reqs, 2)
	assert.Equal(t, []string{"other"}, reqs[1].Names, "names are the whole subscription after the change")
	r.Send(1, "EDS", "2", "5", res("other", "h2"), nil, 10)
	r.Delta(1, "EDS", DeltaRequest{Nonce: "2"})
	assert.Len(t, filterEv(read(t, buf), EventRequest), 2, "an ACK without subscription changes is not a request")
}

// A NACK storm cannot grow the recorder without bound: old sends are forgotten, and a
// late answer to one of them is unmatched.
func TestRememberedSendsAreBounded(t *testing.T) {
	t.Parallel()
	r, _ := newTestRecorder(protocol.SotW)
	for i := 1; i <= maxRemembered+50; i++ {
		r.Send(1, "RDS", strconv.Itoa(i), "3", res("route", "bad"), nil, 10)
	}
	r.mu.Lock()
	ts := r.typeLocked(1, "RDS")
	assert.Len(t, ts.sentAll, maxRemembered)
	assert.LessOrEqual(t, len(ts.pending), maxRemembered)
	r.mu.Unlock()
	assert.Equal(t, EventUnmatched, r.Feedback(1, "RDS", Feedback{Nonce: "1", Error: msg("x")}).Event)
	assert.Equal(t, EventNack, r.Feedback(1, "RDS", Feedback{Nonce: strconv.Itoa(maxRemembered + 50), Error: msg("x")}).Event)
}

func TestNilRecorderIsANoOp(t *testing.T) {
	t.Parallel()
	var r *Recorder
	r.SetStep("x")
	r.StreamOpen(1, "")
	r.Send(1, "CDS", "1", "1", nil, nil, 0)
	assert.Equal(t, Event{}, r.Feedback(1, "CDS", Feedback{Nonce: "1"}))
	r.StreamClose(1)
	assert.Nil(t, r.Status())
	assert.NoError(t, r.Err())
	assert.Zero(t, r.Lines())
}

func TestObserverAndDataPlaneTimestamp(t *testing.T) {
	t.Parallel()
	var seen []string
	var buf bytes.Buffer
	r := NewRecorder(&buf, protocol.Delta, WithServer(2), WithObserver(func(e Event) { seen = append(seen, e.Event) }))
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	r.Emit(Event{Event: EventDataPlane, TS: at, Status: 200})
	r.Emit(Event{Event: EventStep, TS: at})
	ev := read(t, &buf)
	assert.Equal(t, []string{EventDataPlane, EventStep}, seen)
	assert.Equal(t, at, ev[0].TS, "a data-plane event keeps the time its response arrived")
	assert.NotEqual(t, at, ev[1].TS, "other events are stamped by the recorder")
	assert.Equal(t, 2, ev[0].Server)
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, assert.AnError }

func TestWriteErrorIsKept(t *testing.T) {
	t.Parallel()
	r := NewRecorder(failWriter{}, protocol.SotW)
	r.StreamOpen(1, "")
	require.Error(t, r.Err())
	assert.Contains(t, r.Err().Error(), "write xds.log")
}

func TestReadSkipsBadLinesWithACount(t *testing.T) {
	t.Parallel()
	good := `{"ts":"2026-11-29T12:00:00Z","event":"publish","mode":"sotw","step":"a","version":"1"}`
	in := strings.Join([]string{
		good,
		`{"ts":"2026-11-29T12:00:00Z","event":"publish","mode":"sotw","st`, // truncated
		`{"ts":"2026-11-29T12:00:00Z","event":"teleport","mode":"sotw","step":"a"}`,
		`{"ts":"2026-11-29T12:00:00Z","event":"send","mode":"grpc","step":"a"}`,
		`{"event":"send","mode":"sotw","step":"a"}`,
		`{"ts":"2026-11-29T12:00:00Z","event":"send","mode":"sotw","step":"a","stream":"one"}`,
		``,
	}, "\n")
	ev, st, err := Read(strings.NewReader(in))
	require.NoError(t, err)
	assert.Len(t, ev, 1)
	assert.Equal(t, 6, st.Lines)
	assert.Equal(t, 5, st.Skipped)
	assert.Contains(t, st.FirstSkip, "line 2")

	var scanned []Event
	sst, err := Scan(strings.NewReader(in), func(e Event) { scanned = append(scanned, e) })
	require.NoError(t, err)
	assert.Equal(t, ev, scanned, "Scan hands over the events Read returns")
	assert.Equal(t, st, sst)

	_, _, err = Read(strings.NewReader(""))
	assert.EqualError(t, err, "xds.log is empty")
	_, _, err = Read(strings.NewReader("garbage\n"))
	assert.ErrorContains(t, err, "no valid event")
}

func filterEv(ev []Event, kind string) []Event {
	var out []Event
	for _, e := range ev {
		if e.Event == kind {
			out = append(out, e)
		}
	}
	return out
}

// The hand-written encoder must produce what encoding/json would.
func TestResourcesEncodeLikeEncodingJSON(t *testing.T) {
	t.Parallel()
	tr, fa := true, false
	rs := Resources{
		{Type: "CDS", Name: "inventory", Hash: "ab12"},
		{Name: "quote-route", Version: "3", Hash: "cd", Redundant: &tr},
		{Name: `we"ird\name<&>é` + "\x01", Version: "v\u2028", Hash: "", Redundant: &fa},
	}
	got, err := rs.MarshalJSON()
	require.NoError(t, err)
	want, err := json.Marshal([]Resource(rs))
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
	var back Resources
	require.NoError(t, json.Unmarshal(got, &back))
	assert.Equal(t, rs, back)
	n, err := Resources(nil).MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, "null", string(n))
}

func TestFingerprintIgnoresOrderAndNonce(t *testing.T) {
	t.Parallel()
	a := fingerprintOf([]Resource{{Name: "x", Hash: "1"}, {Name: "y", Hash: "2"}}, nil)
	b := fingerprintOf([]Resource{{Name: "y", Hash: "2"}, {Name: "x", Hash: "1"}}, nil)
	c := fingerprintOf([]Resource{{Name: "x", Hash: "2"}, {Name: "y", Hash: "1"}}, nil)
	d := fingerprintOf([]Resource{{Name: "x", Hash: "1"}}, []string{"y"})
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, c)
	assert.NotEqual(t, a, d)
}
