package benchcore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// TestMeterNodes: the per-proxy wait maps streams to nodes through the node on their
// first request, waits for each node's own versions, keeps the moment a version was
// first ACKed, and ends at a NACK.
func TestMeterNodes(t *testing.T) {
	m := NewMeter()
	ev := m.Observe
	ev(xdslog.Event{Event: xdslog.EventStreamOpen, Stream: 1})
	ev(xdslog.Event{Event: xdslog.EventStreamOpen, Stream: 2})
	ev(xdslog.Event{Event: xdslog.EventRequest, Stream: 1, Type: "CDS", Node: "a"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone() // the condition is checked once
	err := m.WaitNodesSubscribed(done, []string{"a", "b"}, "CDS")
	require.ErrorIs(t, err, context.Canceled, "b has no stream yet")
	ev(xdslog.Event{Event: xdslog.EventRequest, Stream: 2, Type: "CDS", Node: "b"})
	require.NoError(t, m.WaitNodesSubscribed(ctx, []string{"a", "b"}, "CDS"))

	wants := map[string]Want{
		"a": {Versions: map[string]string{"EDS": "a.2"}, Types: []string{"EDS"}},
		"b": {Versions: map[string]string{"EDS": "b.7"}, Types: []string{"EDS"}},
	}
	ev(xdslog.Event{Event: xdslog.EventAck, Step: "update-1", Stream: 1, Type: "EDS", SentVersion: "a.2"})
	ev(xdslog.Event{Event: xdslog.EventAck, Step: "update-1", Stream: 2, Type: "EDS", SentVersion: "a.2"})
	var told []string
	_, err = m.WaitNodes(done, "update-1", wants, func(n string) { told = append(told, n) })
	require.ErrorIs(t, err, context.Canceled, "b ACKed a's version, not its own")
	assert.ErrorContains(t, err, "still waiting for b")
	assert.Equal(t, []string{"a"}, told, "a is told as soon as it converged")
	m.mu.Lock()
	firstA := m.firstAck[ackKey{1, "EDS", "a.2"}]
	m.mu.Unlock()
	// a's second ACK at the same version does not move the moment it ran it.
	ev(xdslog.Event{Event: xdslog.EventAck, Step: "update-1", Stream: 1, Type: "EDS", SentVersion: "a.2"})
	ev(xdslog.Event{Event: xdslog.EventAck, Step: "update-1", Stream: 2, Type: "EDS", SentVersion: "b.7"})
	told = nil
	got, err := m.WaitNodes(ctx, "update-1", wants, func(n string) { told = append(told, n) })
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a", "b"}, told)
	assert.Equal(t, int64(1), got["a"].Stream)
	assert.Equal(t, int64(2), got["b"].Stream)
	assert.Equal(t, firstA, got["a"].At, "the first ACK of the version")
	assert.False(t, got["b"].At.Before(got["a"].At))

	// A reconnected node is judged on its newest stream.
	ev(xdslog.Event{Event: xdslog.EventStreamOpen, Stream: 3})
	ev(xdslog.Event{Event: xdslog.EventRequest, Stream: 3, Type: "CDS", Node: "b"})
	_, err = m.WaitNodes(done, "update-1", wants, nil)
	require.ErrorIs(t, err, context.Canceled, "b's new stream has ACKed nothing")

	// A NACK ends the wait with its message.
	ev(xdslog.Event{Event: xdslog.EventSend, Step: "update-2", Stream: 1, Type: "EDS", Version: "a.3"})
	ev(xdslog.Event{Event: xdslog.EventNack, Step: "update-2", Stream: 1, Type: "EDS", SentVersion: "a.3", Error: "bad endpoint"})
	_, err = m.WaitNodes(ctx, "update-2", wants, nil)
	require.ErrorContains(t, err, "bad endpoint")
	require.NoError(t, ctx.Err())
}

func TestStatOf(t *testing.T) {
	// Quartiles by nearest rank: p25 of 4 values is the 1st, p75 the 3rd.
	assert.Equal(t, Stat{Median: 2, Min: 1, Max: 9, P25: 1, P75: 9, Count: 3}, StatOf([]float64{9, 1, 2}))
	assert.Equal(t, Stat{Median: 2.5, Min: 1, Max: 4, P25: 1, P75: 3, Count: 4}, StatOf([]float64{4, 1, 3, 2}))
	assert.Equal(t, Stat{Median: 7, Min: 7, Max: 7, P25: 7, P75: 7, Count: 1}, StatOf([]float64{7}))
}

func TestField1(t *testing.T) {
	// Cluster{name: "inventory-0001", connect_timeout: 1s} encoded by hand: field 2
	// (connect_timeout) first, to check the scan skips fields before the name.
	b := []byte{0x12, 0x02, 0x08, 0x01, 0x0a, 0x0e}
	b = append(b, "inventory-0001"...)
	got, ok := field1(b)
	require.True(t, ok)
	assert.Equal(t, "inventory-0001", got)
	_, ok = field1([]byte{0x0a, 0x10, 'x'}) // truncated
	assert.False(t, ok)
}

func TestMeter(t *testing.T) {
	m := NewMeter()
	red, fresh := true, false
	ev := func(e xdslog.Event) { m.Observe(e) }
	ev(xdslog.Event{Event: xdslog.EventStreamOpen, Stream: 1})
	ev(xdslog.Event{Event: xdslog.EventRequest, Stream: 1, Type: "CDS"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, m.WaitSubscribed(ctx, 1))

	ev(xdslog.Event{Event: xdslog.EventSend, Step: "update-1", Stream: 1, Type: "EDS", Version: "2", Bytes: 100,
		Resources: []xdslog.Resource{{Name: "a", Redundant: &red}, {Name: "b", Redundant: &fresh}}})
	ev(xdslog.Event{Event: xdslog.EventAck, Step: "update-1", Stream: 1, Type: "EDS", SentVersion: "2"})
	eds2 := map[string]string{"EDS": "2"}
	_, err := m.WaitConverged(ctx, "update-1", 1, Want{Versions: eds2, Types: []string{"EDS"}})
	require.NoError(t, err)
	// An ACK at another version is not convergence (a cancelled context: the condition
	// is checked once).
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	_, err = m.WaitConverged(done, "update-1", 1, Want{Versions: map[string]string{"EDS": "mh3.2"}, Types: []string{"EDS"}})
	require.ErrorIs(t, err, context.Canceled)

	// Names that went away: converged once the client unsubscribed in this step, by a
	// request or a stale one (the library ignores it; the client let go all the same).
	gone := map[string][]string{"EDS": {"a", "c"}}
	_, err = m.WaitConverged(done, "update-1", 1, Want{Versions: eds2, Types: []string{"EDS"}, Dropped: gone})
	require.ErrorIs(t, err, context.Canceled, "nothing unsubscribed yet")
	ev(xdslog.Event{Event: xdslog.EventRequest, Step: "initial", Stream: 1, Type: "EDS", Removed: []string{"c"}})
	ev(xdslog.Event{Event: xdslog.EventRequest, Step: "update-1", Stream: 1, Type: "EDS", Removed: []string{"a"}})
	_, err = m.WaitConverged(done, "update-1", 1, Want{Versions: eds2, Types: []string{"EDS"}, Dropped: gone})
	require.ErrorIs(t, err, context.Canceled, "c went in another step")
	ev(xdslog.Event{Event: xdslog.EventStale, Step: "update-1", Stream: 1, Type: "EDS", Removed: []string{"c"}})
	_, err = m.WaitConverged(done, "update-1", 1, Want{Versions: eds2, Types: []string{"EDS"}, Dropped: gone})
	require.NoError(t, err)
	v := m.Step("update-1")
	assert.Equal(t, TypeTally{Responses: 1, Resources: 2, Redundant: 1, Bytes: 100}, v.ByType["EDS"])
	assert.Equal(t, 1, v.Acks)

	// A NACK ends the wait with its message instead of running into the deadline.
	ev(xdslog.Event{Event: xdslog.EventSend, Step: "update-2", Stream: 1, Type: "EDS", Version: "3"})
	ev(xdslog.Event{Event: xdslog.EventNack, Step: "update-2", Stream: 1, Type: "EDS", SentVersion: "3", Error: "bad endpoint"})
	_, err = m.WaitConverged(ctx, "update-2", 1, Want{Versions: map[string]string{"EDS": "3"}, Types: []string{"EDS"}})
	require.ErrorContains(t, err, "bad endpoint")
	require.NoError(t, ctx.Err(), "the NACK ended the wait, not the deadline")

	// A closed stream no longer counts towards convergence.
	ev(xdslog.Event{Event: xdslog.EventStreamClose, Stream: 1})
	short, cancelShort := context.WithCancel(context.Background())
	cancelShort()
	_, err = m.WaitConverged(short, "update-1", 1, Want{Versions: eds2, Types: []string{"EDS"}})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, m.StreamsOpened())
}

func TestParseShape(t *testing.T) {
	for in, want := range map[string]resources.OnDemand{
		"none": {}, "vhds": {VirtualHosts: true}, "cds": {Clusters: true}, "vhds+cds": {VirtualHosts: true, Clusters: true}, "cds+vhds": {VirtualHosts: true, Clusters: true},
	} {
		got, err := ParseShape(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	assert.Equal(t, "vhds+cds", ShapeName(resources.OnDemand{VirtualHosts: true, Clusters: true}))
	for _, bad := range []string{"", "vhds,cds", "rds", "vhds+"} {
		_, err := ParseShape(bad)
		assert.Error(t, err, bad)
	}
}
