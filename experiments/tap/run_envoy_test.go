package tap

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/shared/loopback/loopbacktest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// TestRunWithEnvoy: real Envoy, on the bootstrap lab bootstrap --xds-addr TAP renders,
// talks to the workbench's control plane through lab tap, in SotW and delta: it ACKs
// every type, and the tap's log has the stream (with Envoy's node ID), its requests,
// sends and ACKs, with no publish.
func TestRunWithEnvoy(t *testing.T) {
	bin := envoytest.Require(t)
	for _, mode := range []protocol.Mode{protocol.SotW, protocol.Delta} {
		t.Run(mode.String(), func(t *testing.T) {
			r := startTapRunOn(t, mode, loopbacktest.FreePorts(t, 1)[0])
			bs, err := bootstrap.Render(mode, bootstrap.Params{XDSAddr: r.addr})
			require.NoError(t, err)
			dir := t.TempDir()
			bsPath := filepath.Join(dir, "bootstrap.yaml")
			require.NoError(t, os.WriteFile(bsPath, bs, 0o644))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			proc, err := envoy.Start(ctx, envoy.Options{Binary: bin, ConfigPath: bsPath, LogPath: filepath.Join(dir, "envoy.log"), ExtraArgs: []string{"--concurrency", "1"}})
			require.NoError(t, err)
			defer func() { _ = proc.Stop(context.Background()) }()
			for _, typ := range []string{"CDS", "EDS", "LDS", "RDS"} {
				waitLog(t, r.tapLog, typ+" ACK", func(e xdslog.Event) bool { return e.Event == xdslog.EventAck && e.Type == typ })
				waitLog(t, r.cpLog, typ+" ACK by the control plane", func(e xdslog.Event) bool { return e.Event == xdslog.EventAck && e.Type == typ })
			}
			require.NoError(t, proc.Stop(ctx))
			require.NoError(t, r.stop())

			ev := readLog(t, r.tapLog)
			assert.Equal(t, xdslog.SourceTap, ev[0].Source)
			count := map[string]int{}
			node := ""
			for _, e := range ev {
				assert.Equal(t, mode, e.Mode)
				count[e.Event]++
				if e.Event == xdslog.EventRequest && e.Node != "" {
					node = e.Node
				}
			}
			assert.Equal(t, resources.NodeID, node)
			assert.Equal(t, 1, count[xdslog.EventStreamOpen])
			assert.Equal(t, 1, count[xdslog.EventStreamClose])
			assert.GreaterOrEqual(t, count[xdslog.EventSend], 4)
			assert.GreaterOrEqual(t, count[xdslog.EventAck], 4)
			assert.Zero(t, count[xdslog.EventPublish])
			assert.Zero(t, count[xdslog.EventUndecodable])
			assert.Zero(t, count[xdslog.EventNack])
			// The tap's sends are the control plane's: same nonces, versions and hashes.
			cp := readLog(t, r.cpLog)
			assert.Equal(t, tapExchanges(cp), tapExchanges(ev))
		})
	}
}

// tapExchanges is a log's sends and ACKs per type, in order, as nonce, version and
// resource hashes. Across types the two sides may see them interleaved differently (a
// request and a response of different types cross on the wire).
func tapExchanges(ev []xdslog.Event) map[string][]string {
	out := map[string][]string{}
	for _, e := range ev {
		if e.Event != xdslog.EventSend && e.Event != xdslog.EventAck {
			continue
		}
		s := e.Event + " " + e.Type + " " + e.Nonce + " " + e.Version + " " + e.SentVersion
		for _, x := range e.Resources {
			s += " " + x.Name + "@" + x.Version + "#" + x.Hash
		}
		out[e.Type] = append(out[e.Type], s)
	}
	return out
}
