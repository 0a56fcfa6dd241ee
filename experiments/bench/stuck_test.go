package bench

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// TestSweepStuckClient: with a stuck client beside three fan-out clients, every
// fan-out client still ACKs every change at its asserted version (checkStructure), on
// both caches and in both protocols, and once the stuck client stops reading it is sent
// at most two EDS responses however many changes are published: the first change's,
// and the second's if it was already waiting in Recv for the first (then it reads and
// ACKs that one; if it was still answering the initial state, it reads nothing more and
// gets one). The library answers only a watch a request opened, and a client that reads
// nothing sends no request.
func TestSweepStuckClient(t *testing.T) {
	const k, repeat = 3, 4
	rep, dir, _ := sweep(t, benchcore.Options{
		Clusters: []int{1000}, Clients: k, StuckClients: 1, Client: benchcore.ClientSim, Modes: benchcore.DefaultModes,
		SotWVersions: []publish.VersionStrategy{publish.PerType},
		Caches:       []publish.Cache{publish.SnapshotCache, publish.LinearCache}, Repeat: repeat,
	})
	require.Len(t, rep.Configs, 4)
	checkStructure(t, rep, k)
	md, err := os.ReadFile(filepath.Join(dir, "bench.md"))
	require.NoError(t, err)
	assert.Regexp(t, `endpoint snapshot delta N=1000: 1 stuck client\(s\); [12] response\(s\), `, string(md))
	for _, c := range rep.Configs {
		assert.Equal(t, 1, c.StuckClients, c.Series)
		assert.Equal(t, k, c.StreamsOpened, "%s: the stuck stream counts in no figure of the others", c.Series)
		assert.GreaterOrEqual(t, c.StuckInitialSends, 4, "%s: the initial state of four types", c.Series)
		after := c.StuckSends - c.StuckInitialSends
		assert.True(t, after == 1 || after == 2, "%s: %d responses after it stopped reading, want 1 or 2 (not one per change: %d)", c.Series, after, repeat)
		t.Logf("%s %s: %d sends, %d bytes after the stuck client stopped reading", c.Series, c.Cache, c.StuckSends-c.StuckInitialSends, c.StuckBytes-c.StuckInitialBytes)
	}
}

// TestStuckSendParksInFlowControl names where a stuck client's stream waits. With 2,000
// clusters its CDS response (about 200 KB SotW, 370 KB delta) is more than its 64 KiB
// window plus grpc-go's 64 KiB per-stream write quota, so the next send on that stream
// (LDS) parks in (*writeQuota).get (internal/transport/flowcontrol.go), inside the
// library's send for that one stream (sotw/v3/ads.go processADS, delta/v3/server.go
// process). Publishes still return: the cache hands the stream's responses to a
// buffered channel, and answers no watch the stuck client did not reopen.
func TestStuckSendParksInFlowControl(t *testing.T) {
	for _, mode := range benchcore.DefaultModes {
		for _, cache := range []publish.Cache{publish.SnapshotCache, publish.LinearCache} {
			t.Run(mode.String()+"-"+string(cache), func(t *testing.T) {
				o := controlplane.Options{Mode: mode, Cache: cache, Recorder: xdslog.NewRecorder(io.Discard, mode)}
				if mode == protocol.SotW {
					o.Versions, o.NackPolicy = controlplane.SotWDefaults(cache)
				}
				cp, err := controlplane.New(o)
				require.NoError(t, err)
				t.Cleanup(cp.Stop)
				_, err = cp.Publish(context.Background(), resources.State{Version: "1", InventoryPort: 18080, Clusters: 2000})
				require.NoError(t, err)
				lis, err := net.Listen("tcp", "127.0.0.1:0")
				require.NoError(t, err)
				go func() { _ = cp.Serve(lis) }()
				stopRaw := neverReading(t, lis.Addr().String(), mode)
				t.Cleanup(stopRaw)
				require.Eventually(t, parkedInWriteQuota, 10*time.Second, 20*time.Millisecond,
					"a library send parked in grpc-go's write quota")
				for v := 2; v <= 5; v++ {
					done := make(chan error, 1)
					go func() {
						_, err := cp.Publish(context.Background(), resources.State{Version: strconv.Itoa(v), InventoryPort: 18080 + v, Clusters: 2000})
						done <- err
					}()
					select {
					case err := <-done:
						require.NoError(t, err, "publish %d", v)
					case <-time.After(30 * time.Second):
						t.Fatalf("publish %d did not return while a client is stuck:\n%s", v, allStacks())
					}
				}
			})
		}
	}
}

// neverReading opens a stream on its own connection with a static 64 KiB window, asks
// for CDS and LDS, and never reads: its first response alone fills the window.
func neverReading(t *testing.T, addr string, mode protocol.Mode) func() {
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(stuckWindow), grpc.WithInitialConnWindowSize(stuckWindow))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	c := discovery.NewAggregatedDiscoveryServiceClient(conn)
	node := &core.Node{Id: resources.NodeID}
	if mode == protocol.SotW {
		s, err := c.StreamAggregatedResources(ctx)
		require.NoError(t, err)
		require.NoError(t, s.Send(&discovery.DiscoveryRequest{Node: node, TypeUrl: resources.CDS.URL()}))
		require.NoError(t, s.Send(&discovery.DiscoveryRequest{TypeUrl: resources.LDS.URL()}))
	} else {
		s, err := c.DeltaAggregatedResources(ctx)
		require.NoError(t, err)
		require.NoError(t, s.Send(&discovery.DeltaDiscoveryRequest{Node: node, TypeUrl: resources.CDS.URL()}))
		require.NoError(t, s.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: resources.LDS.URL()}))
	}
	return func() { cancel(); _ = conn.Close() }
}

// parkedInWriteQuota reports whether a goroutine of go-control-plane's server waits in
// grpc-go's per-stream write quota.
func parkedInWriteQuota() bool {
	for _, g := range strings.Split(allStacks(), "\n\n") {
		if strings.Contains(g, "(*writeQuota).get") && strings.Contains(g, "go-control-plane/pkg/server/") {
			return true
		}
	}
	return false
}

// allStacks is every goroutine's stack.
func allStacks() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}
