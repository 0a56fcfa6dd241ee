package serve

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/shared/xdsmetrics/xdsmetricstest"
)

// TestServeMetrics serves with --metrics-addr, drives a simulated client through an
// invalid route and back (in SotW a NACK storm, condensed in the log past
// --max-log-size), and scrapes /metrics until the exchange is quiet: every series then
// equals the count of its events in xds.log, storm summaries counted as their sends and
// NACKs, and the RDS NACKs are there.
func TestServeMetrics(t *testing.T) {
	for _, mode := range []protocol.Mode{protocol.SotW, protocol.Delta} {
		t.Run(mode.String(), func(t *testing.T) {
			o := serveTestOptions(t, mode)
			o.MetricsAddr = "127.0.0.1:0"
			o.MaxLogSize = 64 << 10
			send, out, addr, stop := startServe(t, o)
			url := serveAddr(t, out, `out: metrics: (http://127\.0\.0\.1:\d+/metrics)`)
			c := connectSim(t, addr, mode)
			_, err := c.WaitFor(t.Context(), func(s simclient.State) bool { return len(s.Accepted[resources.RDS]) == 1 })
			require.NoError(t, err)

			send("invalid")
			serveWaitFor(t, 20*time.Second, "a NACK in the log (condensed storm lines in SotW)", func() bool {
				ev, _, err := xdslog.ReadFile(o.LogPath)
				if err != nil {
					return false
				}
				for _, e := range ev {
					if (mode == protocol.SotW && e.Event == xdslog.EventStorm) || (mode == protocol.Delta && e.Event == xdslog.EventNack) {
						return true
					}
				}
				return false
			})
			send("valid")
			rds := func(s xdsmetricstest.Samples, name string) float64 {
				return s[xdsmetricstest.Series(name, map[string]string{"type": "RDS", "mode": mode.String(), "cache": "snapshot"})]
			}
			// Quiet once the recovery's RDS ACK is in the log: nothing follows it.
			var got, want xdsmetricstest.Samples
			serveWaitFor(t, 20*time.Second, "the recovery's ACK, and the scrape to equal the log's counts", func() bool {
				ev, _, err := xdslog.ReadFile(o.LogPath)
				if err != nil {
					return false
				}
				want = xdsmetricstest.FromLog(ev, mode, "snapshot")
				if got, err = xdsmetricstest.Scrape(url); err != nil {
					return false
				}
				return rds(want, "lab_xds_ack_total") >= 2 && samplesEqual(want, got)
			})
			assert.Positive(t, rds(got, "lab_xds_nack_total"))
			assert.Positive(t, rds(got, "lab_xds_publish_to_ack_seconds_count"))
			assert.Positive(t, rds(got, "lab_xds_sent_bytes_total"))
			assert.Equal(t, 1.0, got[xdsmetricstest.Series("lab_xds_connected_streams", map[string]string{"mode": mode.String(), "cache": "snapshot"})])
			require.NoError(t, stop())
		})
	}
}

// samplesEqual: every series counted from the log has the scraped value (the histogram's
// sum within a microsecond), and no lab_xds_ series was scraped that the log has no count for.
func samplesEqual(want, got xdsmetricstest.Samples) bool {
	for series, v := range want {
		g, ok := got[series]
		if !ok {
			return false
		}
		if strings.Contains(series, "_seconds_sum") {
			if d := g - v; d > 1e-6 || d < -1e-6 {
				return false
			}
			continue
		}
		if g != v {
			return false
		}
	}
	for series := range got {
		if _, ok := want[series]; !ok && strings.HasPrefix(series, "lab_xds_") {
			return false
		}
	}
	return true
}
