package protocol

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/sotw"
)

const (
	portV1 = 18080
	portV2 = 18081
)

// TestScenario runs initial -> port-change -> invalid-route -> recover -> reconnect ->
// removal against each front end and asserts what was sent, what was accepted and how
// the feedback was correlated.
func TestScenario(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) { runScenario(t, v) })
	}
}

func runScenario(t *testing.T, v variant) {
	h := newHarness(t, v)
	sotwMode := v.mode == protocol.SotW
	client, err := simclient.New(v.mode, "")
	require.NoError(t, err)

	// --- initial ---
	set1 := h.publish("initial", resources.State{Version: "1", InventoryPort: portV1})
	vers1 := h.pub.Versions()
	if v.linear() {
		// The LinearCache gives out its own versions: each type's counter (one per
		// UpdateResources) behind the prefix of this instance, never the workbench's label.
		for _, typ := range resources.CoreTypes {
			assert.True(t, strings.HasSuffix(vers1[typ], ".1") && vers1[typ] != "1", "%s: LinearCache version %q", typ, vers1[typ])
			assert.Equal(t, strings.TrimSuffix(vers1[resources.LDS], "1"), strings.TrimSuffix(vers1[typ], "1"), "one prefix for the instance")
		}
	}
	stop := h.connect(client)
	st := h.waitClient(client, "initial state accepted", func(s simclient.State) bool { return acceptedHashes(s, set1) })
	ev := h.waitLog("four initial ACKs", func(ev []xdslog.Event) bool { return len(filter(ev, of("initial", xdslog.EventAck))) >= 4 })
	for _, typ := range resources.CoreTypes {
		sends := filter(ev, ofType("initial", xdslog.EventSend, string(typ)))
		require.Len(t, sends, 1, "%s: one initial send", typ)
		acks := filter(ev, ofType("initial", xdslog.EventAck, string(typ)))
		require.Len(t, acks, 1, "%s: one initial ACK", typ)
		assert.Equal(t, sends[0].Nonce, acks[0].Nonce, "%s: ACK answers the send's nonce", typ)
		assert.Equal(t, label(v, "1", vers1, typ), sends[0].Version, "%s: version_info / system_version_info", typ)
		assert.Equal(t, label(v, "1", vers1, typ), acks[0].SentVersion)
		assert.Equal(t, label(v, "1", vers1, typ), acks[0].Accepted())
		for _, r := range set1.ByType[typ].All() {
			want := label(v, "1", vers1, typ)
			if !sotwMode {
				want = r.Hash // delta: per-resource version is the content hash
			}
			assert.Equal(t, want, st.Version(typ, r.Name), "%s %s accepted version", typ, r.Name)
			require.Len(t, sends[0].Resources, 1)
			assert.Equal(t, r.Hash, sends[0].Resources[0].Hash, "recorded hash is the wire content hash")
			assert.False(t, sends[0].Resources[0].IsRedundant())
		}
		assert.Equal(t, label(v, "1", vers1, typ), st.VersionInfo[typ])
	}
	requireStatusMatches(t, h, client)

	// --- port-change ---
	set2 := h.publish("port-change", resources.State{Version: "2", InventoryPort: portV2})
	vers2 := h.pub.Versions()
	st = h.waitClient(client, "port change accepted", func(s simclient.State) bool {
		if v.name == "sotw-uniform-resend" {
			// The unchanged types arrive again under version 2: wait for all of them.
			for _, typ := range resources.CoreTypes {
				if s.VersionInfo[typ] != "2" {
					return false
				}
			}
		}
		return acceptedHashes(s, set2)
	})
	assert.Equal(t, "127.0.0.1:18081", client.Route("/quote?sku=paper").Endpoint, "simulated data plane follows EDS")
	ev = h.waitLog("port-change ACKs", ackedAll("port-change"))
	pub := filter(ev, of("port-change", xdslog.EventPublish))
	require.Len(t, pub, 1)
	assert.Equal(t, []string{"EDS"}, pub[0].Changed)
	sends := filter(ev, of("port-change", xdslog.EventSend))
	switch {
	case v.name == "sotw-uniform-resend":
		require.Len(t, sends, 4, "uniform versions re-send every type")
		for _, s := range sends {
			assert.Equal(t, "2", s.Version)
			require.Len(t, s.Resources, 1)
			assert.Equal(t, s.Type != "EDS", s.Resources[0].IsRedundant(), "%s redundant flag", s.Type)
		}
		for _, typ := range resources.CoreTypes {
			assert.Equal(t, "2", st.Version(typ, set2.ByType[typ].At(0).Name))
		}
	case sotwMode: // per-type, and the LinearCache (only EDS's cache was updated)
		require.Len(t, sends, 1, "per-type versions send only the changed type")
		assert.Equal(t, "EDS", sends[0].Type)
		assert.Equal(t, label(v, "2", vers2, resources.EDS), sends[0].Version)
		assert.Equal(t, label(v, "1", vers1, resources.CDS), st.Version(resources.CDS, resources.ClusterName), "unchanged type keeps its version")
		if v.linear() {
			assert.True(t, strings.HasSuffix(vers2[resources.EDS], ".2"), "EDS's cache moved once more: %s", vers2[resources.EDS])
			assert.Equal(t, vers1[resources.CDS], vers2[resources.CDS], "an unchanged type's cache is not touched")
		}
	default:
		require.Len(t, sends, 1, "delta sends exactly the changed resource")
		assert.Equal(t, "EDS", sends[0].Type)
		require.Len(t, sends[0].Resources, 1)
		assert.Equal(t, resources.ClusterName, sends[0].Resources[0].Name)
		assert.Equal(t, set2.Hashes(resources.EDS)[resources.ClusterName], sends[0].Resources[0].Version)
		assert.NotEqual(t, set1.Hashes(resources.EDS)[resources.ClusterName], sends[0].Resources[0].Version)
		for _, typ := range []resources.Type{resources.LDS, resources.RDS, resources.CDS} {
			name := set1.ByType[typ].At(0).Name
			assert.Equal(t, set1.Hashes(typ)[name], st.Version(typ, name), "%s keeps its version in delta", typ)
		}
	}

	// --- invalid-route ---
	h.publish("invalid-route", resources.State{Version: "3", InventoryPort: portV2, InvalidRoute: true})
	vers3 := h.pub.Versions()
	h.waitClient(client, "route NACK", func(s simclient.State) bool { return s.Counters[resources.RDS].Nacks >= 1 })
	ev = h.waitLog("nack recorded", func(ev []xdslog.Event) bool { return len(filter(ev, of("invalid-route", xdslog.EventNack))) >= 1 })
	nack := filter(ev, of("invalid-route", xdslog.EventNack))[0]
	assert.Equal(t, "RDS", nack.Type)
	assert.Equal(t, label(v, "3", vers3, resources.RDS), nack.SentVersion)
	assert.Equal(t, 1, nack.Repeat)
	assert.Contains(t, nack.Error, "PathSpecifier")
	if sotwMode {
		// Per-type: the route last changed at version 1.
		assert.Equal(t, goodRoute(v, vers1), nack.Accepted(), "a SotW NACK reports the last good version, never the rejected one")
	}
	rdsSends := func() int { return len(filter(h.log.Events(t), ofType("invalid-route", xdslog.EventSend, "RDS"))) }
	if v.policy == sotw.Resend {
		// The library re-sends the rejected response at once, again and again.
		ev = h.waitLog("NACK storm", func(ev []xdslog.Event) bool {
			return len(filter(ev, ofType("invalid-route", xdslog.EventNack, "RDS"))) >= 5
		})
		nacks := filter(ev, ofType("invalid-route", xdslog.EventNack, "RDS"))
		for i, n := range nacks[:5] {
			assert.Equal(t, i+1, n.Repeat, "repeat counts the same rejected content")
			assert.Equal(t, goodRoute(v, vers1), n.Accepted())
		}
	} else {
		// Hold; and the LinearCache, which records what it sent (not what was ACKed), so a
		// NACK carrying the previous version finds nothing to re-send.
		n := rdsSends()
		assert.Never(t, func() bool { return rdsSends() != n }, 300*time.Millisecond, 10*time.Millisecond,
			"nothing is re-sent after the NACK (%s)", v.name)
		assert.Equal(t, 1, n)
	}
	st = client.State()
	routeV := st.Version(resources.RDS, resources.RouteName)
	if sotwMode {
		assert.Equal(t, goodRoute(v, vers1), routeV, "accepted route stays the previous good one")
	} else {
		assert.Equal(t, set2.Hashes(resources.RDS)[resources.RouteName], routeV)
	}
	assert.Equal(t, "127.0.0.1:18081", client.Route("/quote").Endpoint, "last known good still routes to v2")
	requireStatusMatches(t, h, client)

	// --- recover ---
	set4 := h.publish("recover", resources.State{Version: "4", InventoryPort: portV1})
	vers4 := h.pub.Versions()
	st = h.waitClient(client, "recovery accepted", func(s simclient.State) bool {
		return acceptedHashes(s, set4) && s.VersionInfo[resources.RDS] == label(v, "4", vers4, resources.RDS)
	})
	if sotwMode {
		assert.Equal(t, label(v, "4", vers4, resources.RDS), st.Version(resources.RDS, resources.RouteName))
		assert.Equal(t, label(v, "4", vers4, resources.EDS), st.Version(resources.EDS, resources.ClusterName))
	} else {
		assert.Equal(t, set4.Hashes(resources.EDS)[resources.ClusterName], st.Version(resources.EDS, resources.ClusterName))
		// The recovered route has the content the client already runs: delta still sends
		// it (the server tracks what it sent, the rejected hash) and xds.log marks it redundant.
		ev = h.waitLog("recover route send", func(ev []xdslog.Event) bool {
			return len(filter(ev, ofType("recover", xdslog.EventSend, "RDS"))) == 1
		})
		rs := filter(ev, ofType("recover", xdslog.EventSend, "RDS"))[0]
		require.Len(t, rs.Resources, 1)
		assert.True(t, rs.Resources[0].IsRedundant())
	}
	assert.Equal(t, "127.0.0.1:18080", client.Route("/quote").Endpoint)
	requireStatusMatches(t, h, client)

	// --- reconnect ---
	oldStream := streamOf(t, h.log.Events(t), "initial")
	stop()
	h.waitLog("old stream closed", func(ev []xdslog.Event) bool { return len(filter(ev, of("recover", xdslog.EventStreamClose))) == 1 })
	h.rec.SetStep("reconnect")
	stop = h.connect(client)
	if sotwMode {
		versions := h.pub.Versions()
		ev = h.waitLog("resync ACKs", func(ev []xdslog.Event) bool { return len(filter(ev, of("reconnect", xdslog.EventAck))) >= 4 })
		newStream := streamOf(t, ev, "reconnect")
		assert.NotEqual(t, oldStream, newStream)
		for _, e := range filter(ev, of("reconnect", xdslog.EventRequest)) {
			if e.Type == "CDS" || e.Type == "LDS" {
				assert.Equal(t, versions[resources.Type(e.Type)], e.Version, "a SotW reconnect resumes from the accepted version")
			}
		}
		first := filter(ev, func(e xdslog.Event) bool {
			return e.Step == "reconnect" && e.Event == xdslog.EventAck && e.Nonce == "1"
		})
		require.Len(t, first, 1, "nonce 1 on the new stream is answered once")
		assert.Equal(t, newStream, first[0].Stream)
		// Nonce 1 of the new stream answers its first send (CDS), not the old stream's.
		assert.Equal(t, "CDS", first[0].Type)
		assert.Equal(t, versions[resources.CDS], first[0].SentVersion, "correlated with the new stream's send, not the old stream's nonce 1")
	} else {
		ev = h.waitLog("delta resubscribed", func(ev []xdslog.Event) bool {
			return len(filter(ev, of("reconnect", xdslog.EventAck))) >= 2
		})
		reqs := filter(ev, of("reconnect", xdslog.EventRequest))
		require.NotEmpty(t, reqs)
		for _, r := range reqs {
			if r.Type == "CDS" {
				assert.Equal(t, set4.Hashes(resources.CDS), r.InitialVersions, "initial_resource_versions carry the accepted hashes")
			}
		}
		n := func() int {
			cnt := 0
			for _, s := range filter(h.log.Events(t), of("reconnect", xdslog.EventSend)) {
				cnt += len(s.Resources)
			}
			return cnt
		}
		assert.Never(t, func() bool { return n() != 0 }, 300*time.Millisecond, 10*time.Millisecond, "matching hashes are not re-sent")
		// A state published while disconnected: only the stale resource comes back.
		// "Disconnected" means the server saw the close: the client's cancel reaches the
		// server asynchronously, and a publish before that is pushed on the dying stream
		// (TestPublishRacingClose shows that case).
		stop()
		h.waitLog("reconnected stream closed", func(ev []xdslog.Event) bool {
			return len(filter(ev, of("reconnect", xdslog.EventStreamClose))) == 1
		})
		set5 := h.publish("reconnect-stale", resources.State{Version: "5", InventoryPort: portV2})
		stop = h.connect(client)
		h.waitClient(client, "stale endpoint refreshed", func(s simclient.State) bool { return acceptedHashes(s, set5) })
		ev = h.waitLog("stale send", func(ev []xdslog.Event) bool {
			return len(filter(ev, of("reconnect-stale", xdslog.EventAck))) >= 1
		})
		assert.Equal(t, []string{"EDS/inventory"}, sentNames(filter(ev, of("reconnect-stale", xdslog.EventSend))),
			"only the stale resource is re-sent")
	}

	// --- removal ---
	h.publish("remove", resources.State{Version: "6", InventoryPort: portV2, InventoryRemoved: true})
	h.waitClient(client, "cluster removed", func(s simclient.State) bool {
		_, ok := s.Accepted[resources.CDS][resources.ClusterName]
		return !ok
	})
	res := client.Route("/quote")
	assert.Equal(t, 503, res.Status)
	assert.Equal(t, "NC", res.Flags)
	assert.True(t, res.Simulated)
	ev = h.waitLog("removal sends", func(ev []xdslog.Event) bool { return len(filter(ev, ofType("remove", xdslog.EventSend, "CDS"))) >= 1 })
	cds := filter(ev, ofType("remove", xdslog.EventSend, "CDS"))[0]
	if sotwMode {
		assert.Empty(t, cds.Resources, "SotW removes by absence: a CDS response without the cluster")
		for _, s := range filter(ev, of("remove", xdslog.EventSend)) {
			assert.Empty(t, s.Removed, "SotW never sends an explicit removal")
		}
	} else {
		assert.Equal(t, []string{resources.ClusterName}, cds.Removed)
		edsGone := func(ev []xdslog.Event) bool {
			if len(filter(ev, ofType("remove", xdslog.EventSend, "EDS"))) >= 1 {
				return true
			}
			// LinearCache: the publisher updates one type's cache after the other, so the
			// client may act on the CDS removal and unsubscribe from the endpoints before
			// the EDS cache drops them; then no EDS removal is owed (the SnapshotCache sets
			// all types at once and always sends it).
			return v.linear() && len(filter(ev, func(e xdslog.Event) bool {
				return e.Step == "remove" && e.Type == "EDS" && e.Kind == xdslog.RequestUnsubscribe
			})) >= 1
		}
		ev = h.waitLog("EDS removal", edsGone)
		if eds := filter(ev, ofType("remove", xdslog.EventSend, "EDS")); len(eds) > 0 || !v.linear() {
			require.NotEmpty(t, eds)
			assert.Equal(t, []string{resources.ClusterName}, eds[0].Removed)
		}
	}
	stop()
}

// sentNames lists TYPE/name for every resource of sends, in order.
func sentNames(sends []xdslog.Event) []string {
	var out []string
	for _, s := range sends {
		for _, r := range s.Resources {
			out = append(out, s.Type+"/"+r.Name)
		}
	}
	return out
}

// goodRoute is the route's last good SotW version before the invalid route: the label of
// the last publish that changed it.
func goodRoute(v variant, vers1 map[resources.Type]string) string {
	if v.linear() {
		return vers1[resources.RDS]
	}
	if v.versions == publish.PerType {
		return "1"
	}
	return "2"
}

// label is what a type's version_info (SotW) or system_version_info (delta) must be: the
// workbench's label with the snapshot cache; with the LinearCache, that type's cache
// version as the publisher reports it (vers, taken right after the publish).
func label(v variant, snapshot string, vers map[resources.Type]string, typ resources.Type) string {
	if v.linear() {
		return vers[typ]
	}
	return snapshot
}

// streamOf returns the stream of the first send in step.
func streamOf(t *testing.T, ev []xdslog.Event, step string) int64 {
	t.Helper()
	s := filter(ev, of(step, xdslog.EventSend))
	require.NotEmpty(t, s)
	return s[0].Stream
}

// requireStatusMatches checks that the recorder's accepted-versions table (what `lab
// serve` prints) agrees with what the client actually accepted.
func requireStatusMatches(t *testing.T, h *harness, c *simclient.Client) {
	t.Helper()
	require.Eventually(t, func() bool {
		st := h.rec.Status()
		if len(st) != 1 {
			return false
		}
		cs := c.State()
		for _, typ := range resources.CoreTypes {
			rec := st[0].Accepted[string(typ)]
			if len(rec) != len(cs.Accepted[typ]) {
				return false
			}
			for name, e := range cs.Accepted[typ] {
				if rec[name].Version != e.Version || rec[name].Hash != e.Hash {
					return false
				}
			}
		}
		return true
	}, wait, 5*time.Millisecond, "recorder's accepted table matches the client")
}
