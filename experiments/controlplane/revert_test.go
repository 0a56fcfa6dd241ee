package controlplane

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/experiments/simclient/simclienttest"
	"github.com/xds-workbench/lab/experiments/testenv"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/shared/xdslog/xdslogtest"
	"github.com/xds-workbench/lab/sotw"
)

// revertWait bounds every wait of these tests; the machine may be slow.
const revertWait = 20 * time.Second

// revertVariants are the caches and version strategies revert is served with.
var revertVariants = []struct {
	name     string
	cache    publish.Cache
	versions publish.VersionStrategy
}{
	{"snapshot-uniform", publish.SnapshotCache, publish.Uniform},
	{"snapshot-per-type", publish.SnapshotCache, publish.PerType},
	{"linear", publish.LinearCache, ""},
	{"indexed", publish.IndexedCache, ""},
}

// startRevert runs a SotW control plane under the revert NACK policy.
func startRevert(t *testing.T, cache publish.Cache, versions publish.VersionStrategy) (*ControlPlane, *xdslogtest.Log, *xdslog.Recorder) {
	t.Helper()
	// First, so that its check runs after every cleanup registered below.
	testenv.VerifyNoLeaks(t)
	log := &xdslogtest.Log{}
	rec := xdslog.NewRecorder(log, protocol.SotW)
	cp, err := Start(context.Background(), Options{Mode: protocol.SotW, Addr: "127.0.0.1:0", Recorder: rec,
		NackPolicy: sotw.Revert, Cache: cache, Versions: versions})
	require.NoError(t, err)
	t.Cleanup(cp.Stop)
	return cp, log, rec
}

// publishStep publishes s in step: the recorder labels what follows with step.
func publishStep(t *testing.T, cp *ControlPlane, rec *xdslog.Recorder, step string, s resources.State) *resources.Set {
	t.Helper()
	rec.SetStep(step)
	set, err := cp.Publish(context.Background(), s)
	require.NoError(t, err)
	return set
}

// runClient runs a simulated Envoy against cp until the test ends.
func runClient(t *testing.T, cp *ControlPlane) *simclient.Client {
	t.Helper()
	c, err := simclient.New(protocol.SotW, "")
	require.NoError(t, err)
	t.Cleanup(simclienttest.Start(context.Background(), c, dial(t, cp.Addr())))
	return c
}

// runs reports whether the client runs what cp serves now for type typ: its version, and
// the content of the set published.
func runs(cp *ControlPlane, s simclient.State, typ resources.Type) bool {
	if s.VersionInfo[typ] != cp.Publisher().Versions()[typ] {
		return false
	}
	for _, r := range cp.Publisher().Current().ByType[typ].All() {
		if s.Accepted[typ][r.Name].Hash != r.Hash {
			return false
		}
	}
	return true
}

// index is the position of the first event matching keep, or -1.
func index(ev []xdslog.Event, keep func(xdslog.Event) bool) int {
	return slices.IndexFunc(ev, keep)
}

// TestRevertRepublishesAcceptedContent: a NACK of the invalid route is answered by
// publishing <version>-reverted, the current state with the route the client last
// accepted; the client ACKs it, runs the accepted route again and NACKs nothing more;
// then a valid publish is accepted.
func TestRevertRepublishesAcceptedContent(t *testing.T) {
	for _, v := range revertVariants {
		t.Run(v.name, func(t *testing.T) {
			cp, log, rec := startRevert(t, v.cache, v.versions)
			publishStep(t, cp, rec, "initial", resources.State{Version: "1", InventoryPort: 18080})
			c := runClient(t, cp)
			st := simclienttest.WaitFor(t, c, revertWait, "version 1 accepted", func(s simclient.State) bool {
				return runs(cp, s, resources.RDS) && runs(cp, s, resources.EDS)
			})
			good := st.Accepted[resources.RDS][resources.RouteName].Hash
			require.NotEmpty(t, good)

			bad := publishStep(t, cp, rec, "invalid", resources.State{Version: "2", InventoryPort: 18080, InvalidRoute: true})
			require.NotEqual(t, good, bad.Hashes(resources.RDS)[resources.RouteName])
			st = simclienttest.WaitFor(t, c, revertWait, "the reverted route accepted", func(s simclient.State) bool {
				cur := cp.Publisher().Current()
				return cur.Version == "2"+RevertSuffix && runs(cp, s, resources.RDS) && s.Counters[resources.RDS].Nacks == 1
			})
			assert.Equal(t, good, st.Accepted[resources.RDS][resources.RouteName].Hash, "the client runs the route it accepted before")
			assert.Equal(t, "127.0.0.1:18080", c.Route("/quote").Endpoint)

			// The client's state moves before its ACK reaches the server.
			ev := log.WaitFor(t, revertWait, "the ACK of the reverted route", func(ev []xdslog.Event) bool {
				i := index(ev, func(e xdslog.Event) bool { return e.Event == xdslog.EventPublish && e.Version == "2"+RevertSuffix })
				return i >= 0 && len(xdslogtest.Select(ev[i:], "invalid", xdslog.EventAck, "RDS")) > 0
			})
			nacks := xdslogtest.Select(ev, "invalid", xdslog.EventNack, "RDS")
			require.Len(t, nacks, 1)
			reverts := xdslogtest.Select(ev, "invalid", xdslog.EventRevert, "RDS")
			require.Len(t, reverts, 1)
			r := reverts[0]
			assert.Equal(t, "2"+RevertSuffix, r.Version)
			assert.Empty(t, r.Error)
			assert.Equal(t, nacks[0].SentVersion, r.SentVersion)
			assert.Equal(t, nacks[0].Stream, r.Stream)
			assert.Equal(t, resources.NodeID, r.Node)

			// nack -> revert -> publish -> send of the accepted route -> its ACK, in that order.
			iNack := index(ev, func(e xdslog.Event) bool { return e.Event == xdslog.EventNack })
			iRevert := index(ev, func(e xdslog.Event) bool { return e.Event == xdslog.EventRevert })
			iPublish := index(ev, func(e xdslog.Event) bool { return e.Event == xdslog.EventPublish && e.Version == "2"+RevertSuffix })
			require.NotEqual(t, -1, iPublish, "the reverted set is published")
			assert.Less(t, iNack, iRevert)
			assert.Less(t, iRevert, iPublish)
			pub := ev[iPublish]
			assert.Equal(t, []string{"RDS"}, pub.Changed, "only the route changes back")
			require.Len(t, pub.Resources, 1)
			assert.Equal(t, xdslog.Resource{Type: "RDS", Name: resources.RouteName, Hash: good}, pub.Resources[0])
			sends := xdslogtest.Select(ev[iPublish:], "invalid", xdslog.EventSend, "RDS")
			require.Len(t, sends, 1, "the reverted route is sent once")
			require.Len(t, sends[0].Resources, 1)
			assert.Equal(t, good, sends[0].Resources[0].Hash, "its content is the one accepted before")
			acks := xdslogtest.Select(ev[iPublish:], "invalid", xdslog.EventAck, "RDS")
			require.Len(t, acks, 1)
			assert.Equal(t, sends[0].Nonce, acks[0].Nonce)

			// Recovery: a valid publish after the revert (built in full: a reverted set has no
			// state to rebuild from) is accepted.
			publishStep(t, cp, rec, "recover", resources.State{Version: "3", InventoryPort: 18081})
			st = simclienttest.WaitFor(t, c, revertWait, "version 3 accepted", func(s simclient.State) bool {
				return cp.Publisher().Current().Version == "3" && runs(cp, s, resources.EDS) && runs(cp, s, resources.RDS)
			})
			assert.Equal(t, "127.0.0.1:18081", c.Route("/quote").Endpoint)
			assert.Equal(t, 1, st.Counters[resources.RDS].Nacks, "no NACK after the revert")
			ev = log.Events(t)
			assert.Equal(t, 1, xdslogtest.Count(ev, xdslog.EventNack))
			assert.Equal(t, 1, xdslogtest.Count(ev, xdslog.EventRevert))
		})
	}
}

// TestRevertFallsBackToHold: a client that never accepted a route has nothing to revert
// to; the revert event says so, nothing is published, the rejected route is held (sent
// once, NACKed once), and the next valid publish is accepted.
func TestRevertFallsBackToHold(t *testing.T) {
	for _, v := range revertVariants {
		t.Run(v.name, func(t *testing.T) {
			cp, log, rec := startRevert(t, v.cache, v.versions)
			publishStep(t, cp, rec, "initial", resources.State{Version: "1", InventoryPort: 18080, InvalidRoute: true})
			c := runClient(t, cp)
			ev := log.WaitFor(t, revertWait, "the revert event", func(ev []xdslog.Event) bool {
				return len(xdslogtest.Select(ev, "initial", xdslog.EventRevert, "RDS")) > 0
			})
			reverts := xdslogtest.Select(ev, "initial", xdslog.EventRevert, "RDS")
			require.Len(t, reverts, 1)
			assert.Empty(t, reverts[0].Version)
			assert.Contains(t, reverts[0].Error, "never accepted any RDS")
			assert.Contains(t, reverts[0].Error, "the NACK holds")

			publishStep(t, cp, rec, "recover", resources.State{Version: "2", InventoryPort: 18080})
			st := simclienttest.WaitFor(t, c, revertWait, "version 2 accepted", func(s simclient.State) bool { return runs(cp, s, resources.RDS) })
			assert.Equal(t, 1, st.Counters[resources.RDS].Nacks)
			assert.Equal(t, "127.0.0.1:18080", c.Route("/quote").Endpoint)
			ev = log.Events(t)
			assert.Len(t, xdslogtest.Select(ev, "initial", xdslog.EventSend, "RDS"), 1, "held: the rejected route was never re-sent")
			assert.Len(t, xdslogtest.Select(ev, "initial", xdslog.EventNack, "RDS"), 1)
			assert.Equal(t, "2", cp.Publisher().Current().Version, "nothing was reverted")
			for _, e := range ev {
				if e.Event == xdslog.EventPublish {
					assert.NotContains(t, e.Version, RevertSuffix)
				}
			}
		})
	}
}

// TestRevertDecisions drives the recorder by hand (a stream that accepted a route) and
// calls the revert directly: the history bound, a revert of a revert, a NACK overtaken
// by a publish, a closed stream.
func TestRevertDecisions(t *testing.T) {
	cp, log, rec := startRevert(t, publish.SnapshotCache, publish.Uniform)
	ctx := context.Background()
	// The scaled state with two clusters: route targets change the route's content.
	state := func(v int, retarget bool) resources.State {
		s := resources.State{Version: strconv.Itoa(v), InventoryPort: 18080, Clusters: 2}
		if retarget {
			s.RouteTargets = map[int]int{0: 1}
		}
		return s
	}
	first, err := cp.Publish(ctx, state(1, false))
	require.NoError(t, err)
	accepted := first.ByType[resources.RDS].At(0)
	// Stream 1 accepts version 1's route.
	rec.StreamOpen(1, "")
	rec.SotW(1, "RDS", xdslog.SotWRequest{Node: resources.NodeID, Names: []string{resources.RouteName}})
	rec.Send(1, "RDS", "1", "1", []xdslog.Resource{{Name: accepted.Name, Version: "1", Hash: accepted.Hash}}, nil, 0)
	rec.SotW(1, "RDS", xdslog.SotWRequest{Names: []string{resources.RouteName}, VersionInfo: "1", Nonce: "1"})

	lastRevert := func() xdslog.Event {
		var out xdslog.Event
		for _, e := range log.Events(t) {
			if e.Event == xdslog.EventRevert {
				out = e
			}
		}
		return out
	}
	nack := func(stream int64, sent string) xdslog.Event {
		cp.revert(sotw.Nack{Stream: stream, Node: resources.NodeID, Type: resources.RDS, SentVersion: sent})
		return lastRevert()
	}
	current := func() string { return cp.Publisher().Versions()[resources.RDS] }

	// Seven more publishes: version 1 is still among the last RevertHistory sets.
	for v := 2; v <= RevertHistory; v++ {
		_, err := cp.Publish(ctx, state(v, true))
		require.NoError(t, err)
	}
	e := nack(1, "stale")
	assert.Contains(t, e.Error, "since the rejected stale; that publish answers the NACK")

	e = nack(99, current())
	assert.Contains(t, e.Error, "stream 99 is closed")

	e = nack(1, current())
	assert.Empty(t, e.Error)
	assert.Equal(t, strconv.Itoa(RevertHistory)+RevertSuffix, e.Version)
	cur := cp.Publisher().Current()
	assert.Equal(t, e.Version, cur.Version)
	assert.Equal(t, accepted.Hash, cur.Hashes(resources.RDS)[resources.RouteName], "the accepted route, found by its hash")
	_, err = cur.Snapshot(resources.UniformVersions("x"))
	assert.NoError(t, err)

	e = nack(1, current())
	assert.Contains(t, e.Error, "is a revert already")
	assert.Equal(t, strconv.Itoa(RevertHistory)+RevertSuffix, cp.Publisher().Current().Version, "not reverted twice")

	// RevertHistory publishes without version 1's route: it is no longer kept.
	for v := RevertHistory + 1; v <= 2*RevertHistory; v++ {
		_, err := cp.Publish(ctx, state(v, true))
		require.NoError(t, err)
	}
	e = nack(1, current())
	assert.Contains(t, e.Error, "is not among the last 8 sets published for this node; the NACK holds")
	assert.Empty(t, e.Version)
	assert.Equal(t, strconv.Itoa(2*RevertHistory), cp.Publisher().Current().Version)
}
