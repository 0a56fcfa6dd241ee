package xdslog

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/protocol"
)

func lastSend(t *testing.T, ev []Event) Event {
	t.Helper()
	s := filterEv(ev, EventSend)
	require.NotEmpty(t, s)
	return s[len(s)-1]
}

// TestSotWResumeHeldFromLabel: a SotW client resuming with version_info holds what that
// label meant when the server can tell (it saw a client ACK the label, on any stream, or
// a shared book says so), so re-sending the same content is redundant, as with delta's
// initial_resource_versions. An unknown label makes the send's redundancy unknown, not
// "new".
func TestSotWResumeHeldFromLabel(t *testing.T) {
	t.Parallel()
	r, buf := newTestRecorder(protocol.SotW)
	r.SotW(1, "CDS", SotWRequest{})
	r.Send(1, "CDS", "1", "4", res("inventory", "h1"), nil, 10)
	r.SotW(1, "CDS", SotWRequest{VersionInfo: "4", Nonce: "1"})
	r.StreamClose(1)

	req := r.SotW(2, "CDS", SotWRequest{VersionInfo: "4"})
	assert.Equal(t, Event{}, req, "a first request answers nothing")
	reqs := filterEv(read(t, buf), EventRequest)
	resume := reqs[len(reqs)-1]
	assert.Equal(t, RequestResume, resume.Kind)
	assert.Equal(t, map[string]string{"inventory": "h1"}, resume.Held)
	assert.False(t, resume.HeldUnknown)
	r.Send(2, "CDS", "1", "4", res("inventory", "h1"), nil, 10)
	assert.True(t, lastSend(t, read(t, buf)).Resources[0].IsRedundant(), "the client resumed holding exactly this")

	r.SotW(3, "CDS", SotWRequest{VersionInfo: "9"})
	reqs = filterEv(read(t, buf), EventRequest)
	assert.True(t, reqs[len(reqs)-1].HeldUnknown, "label 9 was never ACKed here")
	r.Send(3, "CDS", "1", "4", res("inventory", "h1"), nil, 10)
	s := lastSend(t, read(t, buf))
	assert.Nil(t, s.Resources[0].Redundant, "unknown, not new")
	r.SotW(3, "CDS", SotWRequest{VersionInfo: "4", Nonce: "1"})
	r.Send(3, "CDS", "2", "5", res("inventory", "h1"), nil, 10)
	assert.True(t, lastSend(t, read(t, buf)).Resources[0].IsRedundant(), "known again after the ACK")

	// Another server instance knows the label only through a shared (durable) book.
	alone, _ := newTestRecorder(protocol.SotW)
	alone.SotW(1, "CDS", SotWRequest{VersionInfo: "4"})
	assert.True(t, alone.typeLocked(1, "CDS").heldUnknown)
	var buf2 = buf
	buf2.Reset()
	shared := NewRecorder(buf2, protocol.SotW, WithServer(2), WithLabelBook(r.labels))
	shared.SotW(1, "CDS", SotWRequest{VersionInfo: "4"})
	shared.Send(1, "CDS", "1", "4", res("inventory", "h1"), nil, 10)
	assert.True(t, lastSend(t, read(t, buf2)).Resources[0].IsRedundant())
}

// TestUnsubscribedIsNotHeld: a name the client unsubscribed from is no longer held, so
// sending it after a new subscription is needed (a restored cluster warms on it), not
// redundant. That holds when the library dropped the unsubscribe as stale, as it does
// for Envoy's EDS request after a cluster removal.
func TestUnsubscribedIsNotHeld(t *testing.T) {
	t.Parallel()
	for _, stale := range []bool{false, true} {
		r, buf := newTestRecorder(protocol.SotW)
		eds := []string{"inventory"}
		r.SotW(1, "EDS", SotWRequest{Names: eds})
		r.Send(1, "EDS", "1", "1", res("inventory", "e1"), nil, 10)
		r.SotW(1, "EDS", SotWRequest{Names: eds, VersionInfo: "1", Nonce: "1"})
		nonce := "1"
		if stale {
			r.Send(1, "EDS", "2", "2", nil, nil, 10) // the response to the removal, not yet processed
		}
		e := r.SotW(1, "EDS", SotWRequest{VersionInfo: "1", Nonce: nonce})
		ev := read(t, buf)
		if stale {
			assert.Equal(t, EventStale, e.Event)
			assert.Equal(t, RequestUnsubscribe, e.Kind)
			assert.Equal(t, eds, e.Removed)
			r.SotW(1, "EDS", SotWRequest{Names: eds, VersionInfo: "1", Nonce: "2"}) // ACKs 2; the server's names never changed
		} else {
			un := filterEv(ev, EventRequest)
			assert.Equal(t, RequestUnsubscribe, un[len(un)-1].Kind)
			r.SotW(1, "EDS", SotWRequest{Names: eds, VersionInfo: "1", Nonce: "1"})
		}
		assert.NotContains(t, r.Status()[0].Accepted["EDS"], "inventory", "stale=%v: unsubscribed names are not held", stale)
		r.Send(1, "EDS", "3", "3", res("inventory", "e1"), nil, 10)
		assert.False(t, lastSend(t, read(t, buf)).Resources[0].IsRedundant(), "stale=%v: needed again, not redundant", stale)
	}
}

// TestDiff: the scan (short lists) and the set (long ones, a SotW EDS request names every
// cluster) give the same answer, in the same order.
func TestDiff(t *testing.T) {
	t.Parallel()
	names := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, fmt.Sprintf("c%05d", i))
		}
		return out
	}
	for _, n := range []int{3, smallList, 1000} {
		before, after := names(0, n), names(1, n+2) // c0 goes, c<n> and c<n+1> come
		added, removed := diff(before, after)
		assert.Equal(t, names(n, n+2), added, "n=%d", n)
		assert.Equal(t, names(0, 1), removed, "n=%d", n)
		added, removed = diff(after, after)
		assert.Empty(t, added, "n=%d", n)
		assert.Empty(t, removed, "n=%d", n)
	}
	added, removed := diff(nil, []string{"b", "a"})
	assert.Equal(t, []string{"b", "a"}, added, "in after's order")
	assert.Empty(t, removed)
}
