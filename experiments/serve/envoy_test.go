package serve

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/shared/loopback/loopbacktest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// serveEnvoyOptions: serve --with-envoy --with-inventory on free ports.
func serveEnvoyOptions(t *testing.T, bin envoy.Binary) Options {
	o := serveTestOptions(t, protocol.SotW)
	ports := loopbacktest.FreePorts(t, 3)
	o.WithEnvoy, o.WithInventory, o.EnvoyBin = true, true, bin.Path
	o.ListenerPort, o.InventoryPort, o.V2Port = ports[0], ports[1], ports[2]
	return o
}

// request sends request commands until one is answered with 200 (Envoy's listener
// serves once its route is warm, a moment after the ACKs) and returns that line.
func (s *serveSession) request(t *testing.T, pattern string) string {
	t.Helper()
	re := regexp.MustCompile(pattern)
	var got string
	serveWaitFor(t, 30*time.Second, pattern, func() bool {
		before := len(s.out.all())
		s.n++
		mark := fmt.Sprintf("end-of-request-%d", s.n)
		s.send("request")
		s.send(mark)
		s.waitLine(10*time.Second, regexp.QuoteMeta(mark))
		for _, l := range s.out.all()[before:] {
			if re.MatchString(l) {
				got = l
				return true
			}
		}
		return false
	})
	return got
}

func streamStatus(t *testing.T, st serveStatus) xdslog.StreamStatus {
	t.Helper()
	require.Len(t, st.Streams, 1, "one Envoy, one stream")
	return st.Streams[0]
}

// TestServeWithEnvoy drives lab serve --with-envoy --with-inventory through its standard
// input against real Envoy: after port the types are SYNCED and v2 answers; after invalid
// RDS is NACKED with the reason while Envoy keeps the old route; after valid it is
// SYNCED again; each command is a step in xds.log.
func TestServeWithEnvoy(t *testing.T) {
	bin := envoytest.Require(t)
	o := serveEnvoyOptions(t, bin)
	s := startServeSession(t, o)
	s.waitLine(10*time.Second, fmt.Sprintf(`^out: inventory: v1 on 127\.0\.0\.1:%d, v2 on 127\.0\.0\.1:%d \(port %d moves the traffic to v2\)$`, o.InventoryPort, o.V2Port, o.V2Port))
	s.waitLine(30*time.Second, `^out: envoy: pid \d+, admin http://127\.0\.0\.1:\d+, bootstrap as lab bootstrap --mode sotw --xds-addr 127\.0\.0\.1:\d+ --admin-port 0 prints; listener 127\.0\.0\.1:\d+ \(type request to send /quote\?sku=paper through it\)$`)
	s.waitLine(30*time.Second, `^out: stream 1 open: node teaching-envoy from 127\.0\.0\.1:\d+ \(sotw ADS\)$`)
	for _, typ := range []string{"CDS", "EDS", "LDS", "RDS"} {
		s.waitLine(30*time.Second, `^out: stream 1 `+typ+` ACK version 1$`)
	}
	s.request(t, fmt.Sprintf(`^out: request serve-\d+: 200, answered by v1 \(127\.0\.0\.1:%d\), response flags -$`, o.InventoryPort))

	s.send(fmt.Sprintf("port %d", o.V2Port))
	s.waitLine(30*time.Second, `^out: stream 1 EDS ACK version 2$`)
	st := streamStatus(t, s.waitStatus(30*time.Second, "every type SYNCED at 2", func(st serveStatus) bool {
		if len(st.Streams) != 1 {
			return false
		}
		for _, typ := range []string{"CDS", "EDS", "LDS", "RDS"} {
			if ts := st.Streams[0].Types[typ]; ts.State != xdslog.TypeSynced || ts.Version != "2" {
				return false
			}
		}
		return true
	}))
	assert.Equal(t, "teaching-envoy", st.Node)
	assert.Regexp(t, `^127\.0\.0\.1:\d+$`, st.Peer)
	assert.Equal(t, "2", st.Accepted["EDS"]["inventory"].Version)
	s.request(t, fmt.Sprintf(`^out: request serve-\d+: 200, answered by v2 \(127\.0\.0\.1:%d\), response flags -$`, o.V2Port))

	s.send("invalid")
	s.waitLine(30*time.Second, `^out: stream 1 RDS NACK of version 3 \(the client keeps version 2\): field: "path_specifier", reason: is required$`)
	st = streamStatus(t, s.waitStatus(30*time.Second, "RDS NACKED", func(st serveStatus) bool {
		return len(st.Streams) == 1 && st.Streams[0].Types["RDS"].State == xdslog.TypeNacked
	}))
	rds := st.Types["RDS"]
	assert.Equal(t, "2", rds.Version, "Envoy keeps running version 2 of the route")
	assert.Equal(t, "3", rds.SentVersion)
	assert.Equal(t, `field: "path_specifier", reason: is required`, xdslog.NackReason(rds.Error))
	assert.NotContains(t, rds.Error, "goo.gle", "the stored error has no debug marker")
	// The text status says the same.
	s.send("status")
	s.waitLine(10*time.Second, `^out:   RDS\s+NACKED\s+2\s+version 3 rejected: field: "path_specifier", reason: is required$`)

	s.send("valid")
	s.waitLine(30*time.Second, `^out: stream 1 RDS ACK version 4$`)
	s.waitStatus(30*time.Second, "RDS SYNCED at 4", func(st serveStatus) bool {
		return len(st.Streams) == 1 && st.Streams[0].Types["RDS"].State == xdslog.TypeSynced && st.Streams[0].Types["RDS"].Version == "4"
	})
	s.request(t, `^out: request serve-\d+: 200, answered by v2 `)
	s.stop()
	s.waitLine(10*time.Second, `^out: stream 1 closed: `)

	ev, _, err := xdslog.ReadFile(o.LogPath)
	require.NoError(t, err)
	steps := map[string]bool{}
	answered := map[string]bool{}
	for _, e := range ev {
		if e.Event == xdslog.EventStep {
			steps[strings.SplitN(e.Step, " #", 2)[0]] = true
		}
		if e.Event == xdslog.EventDataPlane && e.Status == 200 {
			answered[e.Backend] = true
		}
	}
	for _, want := range []string{fmt.Sprintf("port %d", o.V2Port), "invalid", "valid", "request"} {
		assert.True(t, steps[want], "step %q in xds.log (have %v)", want, steps)
	}
	assert.Equal(t, map[string]bool{"v1": true, "v2": true}, answered, "the requests are data-plane events")
}

// TestServeWithEnvoyWrongNode: serving --node-id other to an Envoy whose bootstrap says
// teaching-envoy is the classic fault: the open line and status say so plainly.
func TestServeWithEnvoyWrongNode(t *testing.T) {
	bin := envoytest.Require(t)
	o := serveEnvoyOptions(t, bin)
	o.NodeID = "other"
	s := startServeSession(t, o)
	s.waitLine(30*time.Second, `^out: stream 1 open: node teaching-envoy from 127\.0\.0\.1:\d+ \(sotw ADS\); no state for this node ID: this server publishes to node other `)
	st := s.waitStatus(30*time.Second, "the stream's node", func(st serveStatus) bool {
		return len(st.Streams) == 1 && st.Streams[0].Node != ""
	})
	assert.Equal(t, xdslog.TypeNotSent, st.Streams[0].Types["CDS"].State)
	assert.Contains(t, st.Notes, "no stream for node other, the node this server publishes to: nothing receives version 1 (check the node.id in Envoy's bootstrap, or serve with that --node-id)")
	s.send("status")
	s.waitLine(10*time.Second, `^out: no stream for node other, the node this server publishes to: nothing receives version 1 `)
	s.stop()
}

// TestServeWithEnvoyRemove: after remove Envoy lets go of the cluster's endpoints, which
// the console shows (an unsubscribe, or in SotW usually a stale request: the server has
// sent a newer EDS response by then), and a request gets Envoy's 503 NC with no backend.
func TestServeWithEnvoyRemove(t *testing.T) {
	bin := envoytest.Require(t)
	for _, mode := range []protocol.Mode{protocol.SotW, protocol.Delta} {
		t.Run(mode.String(), func(t *testing.T) {
			o := serveEnvoyOptions(t, bin)
			o.Mode = mode
			s := startServeSession(t, o)
			s.waitLine(30*time.Second, `^out: stream 1 RDS ACK version 1$`)
			s.send("remove")
			s.waitLine(30*time.Second, `^out: stream 1 CDS ACK version 2$`)
			s.waitLine(30*time.Second, `^out: stream 1 EDS (stale request: nonce \d+ is not the latest sent \(\d+\), so the server ignores it|unsubscribe: the client let go of every name \(inventory\))$`)
			s.request(t, `^out: request serve-\d+: 503, no backend answered, response flags NC$`)
			s.stop()
		})
	}
}

// TestServeOnDemandWithEnvoy: lab serve --mode delta --on-demand vhds,cds: Envoy starts
// with neither the route's virtual host nor the cluster; the request command (Host
// quote) makes it fetch quote-route/quote, then inventory and its endpoints, and v1
// answers; `port` then moves the fetched cluster's traffic to v2.
func TestServeOnDemandWithEnvoy(t *testing.T) {
	bin := envoytest.Require(t)
	o := serveEnvoyOptions(t, bin)
	o.Mode = protocol.Delta
	o.OnDemand = resources.OnDemand{VirtualHosts: true, Clusters: true}
	s := startServeSession(t, o)
	for _, typ := range []string{"LDS", "RDS", "VHDS"} {
		s.waitLine(30*time.Second, `^out: stream 1 `+typ+` ACK version 1$`)
	}
	s.request(t, fmt.Sprintf(`^out: request serve-\d+: 200, answered by v1 \(127\.0\.0\.1:%d\), response flags -$`, o.InventoryPort))
	s.send(fmt.Sprintf("port %d", o.V2Port))
	s.waitLine(30*time.Second, `^out: stream 1 EDS ACK version 2$`)
	s.request(t, fmt.Sprintf(`^out: request serve-\d+: 200, answered by v2 \(127\.0\.0\.1:%d\), response flags -$`, o.V2Port))
	s.stop()
	s.waitLine(10*time.Second, `^out: stream 1 closed: `)

	ev, _, err := xdslog.ReadFile(o.LogPath)
	require.NoError(t, err)
	added := map[string][]string{}
	for _, e := range ev {
		if e.Event == xdslog.EventRequest {
			added[e.Type] = append(added[e.Type], e.Added...)
		}
		if e.Event == xdslog.EventDataPlane {
			assert.Equal(t, resources.QuoteHost, e.Host)
			require.NotNil(t, e.SentTS)
			assert.False(t, e.SentTS.After(e.TS), "sent before answered")
		}
	}
	assert.Equal(t, []string{"quote-route/quote"}, added["VHDS"], "the one virtual host, on demand")
	assert.Equal(t, []string{"inventory"}, added["CDS"], "the one cluster, on demand")
	assert.Equal(t, []string{"inventory"}, added["EDS"])
}
