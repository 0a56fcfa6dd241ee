package xdslog

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/protocol"
)

// storm drives n NACK/re-send pairs of the same rejected route on stream 1, then a valid
// route that is ACKed, and returns the nonce of that last send.
func storm(r *Recorder, n int) string {
	r.StreamOpen(1, "")
	r.SotW(1, "RDS", SotWRequest{Names: []string{"quote-route"}})
	for i := 1; i <= n; i++ {
		nonce := strconv.Itoa(i)
		r.Send(1, "RDS", nonce, "3", res("quote-route", "bad"), nil, 200)
		r.Feedback(1, "RDS", Feedback{Nonce: nonce, ClientVersion: "2", Error: msg("path_specifier is required")})
	}
	last := strconv.Itoa(n + 1)
	r.Send(1, "RDS", last, "4", res("quote-route", "good"), nil, 210)
	r.Feedback(1, "RDS", Feedback{Nonce: last, ClientVersion: "4"})
	return last
}

// TestStormCondensedPastTheLimit: past the size limit, the repeated pairs of a NACK storm
// become one summary line per second; every send and NACK is still counted (by the
// observer, one by one, and in the log, by the summaries), no other event is lost, and
// the log stays readable.
func TestStormCondensedPastTheLimit(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	clk := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	var observed = map[string]int{}
	r := NewRecorder(&buf, protocol.SotW, WithClock(clk.now), WithMaxLogBytes(1),
		WithObserver(func(e Event) { observed[e.Event]++ }))
	const pairs = 1000
	last := storm(r, pairs)
	r.StreamClose(1)
	require.NoError(t, r.Err())

	ev := read(t, &buf)
	sends, nacks, acks := 0, 0, 0
	var storms []Event
	for _, e := range ev {
		switch e.Event {
		case EventSend:
			sends++
		case EventNack:
			nacks++
		case EventAck:
			acks++
		case EventStorm:
			storms = append(storms, e)
			sends += e.Sends
			nacks += e.Nacks
		}
	}
	assert.Equal(t, pairs+1, sends, "every send is in the log, one line each or in a summary")
	assert.Equal(t, pairs, nacks, "every NACK is in the log")
	assert.Equal(t, 1, acks, "the ACK of the valid route is written as itself")
	assert.Less(t, len(ev), 50, "the storm is condensed: far fewer lines than 2 per pair")
	require.NotEmpty(t, storms)
	next := 2 // nonce 1 and its NACK (the first rejection) are written as themselves
	for i, s := range storms {
		assert.True(t, s.Summary)
		assert.Equal(t, "RDS", s.Type)
		assert.Equal(t, int64(1), s.Stream)
		assert.Equal(t, strconv.Itoa(next), s.Nonce, "summary %d starts where the last one ended", i)
		end, err := strconv.Atoi(s.LastNonce)
		require.NoError(t, err)
		assert.Equal(t, end-next+1, s.Sends)
		assert.Equal(t, s.Sends, s.Nacks)
		require.NotNil(t, s.FirstTS)
		assert.LessOrEqual(t, s.TS.Sub(*s.FirstTS), stormWindow+20*time.Millisecond, "one summary covers about a second")
		assert.Equal(t, "3", s.Version)
		require.Len(t, s.Resources, 1)
		assert.Equal(t, "bad", s.Resources[0].Hash)
		assert.Equal(t, "path_specifier is required", s.Error)
		assert.Equal(t, end, s.Repeat, "repeat counts every rejection of this content")
		next = end + 1
	}
	assert.Equal(t, last, strconv.Itoa(next), "the summaries cover every repeated pair, up to the valid send")
	assert.Equal(t, pairs+1, observed[EventSend], "the observer sees every send")
	assert.Equal(t, pairs, observed[EventNack])
	assert.Zero(t, observed[EventStorm], "summaries are not observed twice")
	assert.Equal(t, int64(buf.Len()), r.Written())
}

// TestStormNotCondensedUnderTheLimit: below the limit (or without one) every pair is
// written one line each.
func TestStormNotCondensedUnderTheLimit(t *testing.T) {
	t.Parallel()
	for _, limit := range []int64{0, 1 << 30} {
		var buf bytes.Buffer
		r := NewRecorder(&buf, protocol.SotW, WithMaxLogBytes(limit))
		storm(r, 50)
		for _, e := range read(t, &buf) {
			assert.NotEqual(t, EventStorm, e.Event, "limit %d", limit)
		}
	}
}

// TestStormFlushedOnFlushAndClose: a storm in progress is written by Flush (shutdown) and
// before the stream's close line.
func TestStormFlushedOnFlushAndClose(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	r := NewRecorder(&buf, protocol.SotW, WithMaxLogBytes(1))
	r.StreamOpen(1, "")
	for i := 1; i <= 5; i++ {
		n := strconv.Itoa(i)
		r.Send(1, "RDS", n, "3", res("quote-route", "bad"), nil, 200)
		r.Feedback(1, "RDS", Feedback{Nonce: n, ClientVersion: "2", Error: msg("bad")})
	}
	r.Flush()
	ev := read(t, &buf)
	s := ev[len(ev)-1]
	require.Equal(t, EventStorm, s.Event)
	assert.Equal(t, 4, s.Sends)
	assert.Equal(t, 4, s.Nacks)
	r.Send(1, "RDS", "6", "3", res("quote-route", "bad"), nil, 200)
	r.StreamClose(1)
	ev = read(t, &buf)
	require.Equal(t, EventStreamClose, ev[len(ev)-1].Event)
	s = ev[len(ev)-2]
	require.Equal(t, EventStorm, s.Event)
	assert.Equal(t, 1, s.Sends)
	assert.Zero(t, s.Nacks)
	assert.Equal(t, 1, *ev[len(ev)-1].Dropped, "the unanswered condensed send is still counted as dropped")
}

// TestSessions: each BeginSession opens a session; lines before the first are a session of
// their own, and a log without session lines is one session.
func TestSessions(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	NewRecorder(&buf, protocol.SotW).Publish("1", nil, nil)
	for range 2 {
		r := NewRecorder(&buf, protocol.SotW)
		id := r.BeginSession()
		assert.NotEmpty(t, id)
		r.Publish("1", nil, nil)
		r.Publish("2", nil, nil)
	}
	ss := Sessions(read(t, &buf))
	require.Len(t, ss, 3)
	assert.Len(t, ss[0], 1, "lines before the first session line")
	for _, s := range ss[1:] {
		require.Len(t, s, 3)
		assert.Equal(t, EventSession, s[0].Event)
		assert.Equal(t, "1", s[1].Version, "every session starts again at version 1")
	}
	assert.NotEqual(t, ss[1][0].Session, ss[2][0].Session)
	assert.Len(t, Sessions(nil), 0)
}
