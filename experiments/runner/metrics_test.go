package runner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/shared/xdsmetrics"
	"github.com/xds-workbench/lab/shared/xdsmetrics/xdsmetricstest"
)

// TestRunMetrics runs the teaching scenario with the simulated client, its events
// observed by xdsmetrics (what lab run --metrics-addr does), and scrapes /metrics: every
// series equals the count of its events in the run's xds.log (sends, resources, bytes,
// ACKs, NACKs, stale and unmatched requests per type, open streams, and the histogram's
// count and sum), and the scenario's invalid route shows as RDS NACKs.
func TestRunMetrics(t *testing.T) {
	for _, c := range []struct {
		mode  protocol.Mode
		cache publish.Cache
	}{{protocol.SotW, publish.SnapshotCache}, {protocol.Delta, publish.LinearCache}, {protocol.SotW, publish.IndexedCache}} {
		t.Run(c.mode.String()+"-"+string(c.cache), func(t *testing.T) {
			dir := t.TempDir()
			m := xdsmetrics.New(c.mode, string(c.cache))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := Execute(ctx, Options{Mode: c.mode, Client: ClientSim, Cache: c.cache, Out: dir, Observer: m.Observe})
			require.NoError(t, err)

			srv, err := xdsmetrics.Serve("127.0.0.1:0", m)
			require.NoError(t, err)
			defer func() { require.NoError(t, srv.Close()) }()
			assert.True(t, strings.HasPrefix(srv.URL(), "http://127.0.0.1:"), srv.URL())
			got, err := xdsmetricstest.Scrape(srv.URL())
			require.NoError(t, err)

			events, _, err := xdslog.ReadFile(filepath.Join(dir, "xds.log"))
			require.NoError(t, err)
			want := xdsmetricstest.FromLog(events, c.mode, string(c.cache))
			for series, v := range want {
				if strings.HasSuffix(series, "_sum") && strings.Contains(series, "publish_to_ack") {
					assert.InDelta(t, v, got[series], 1e-6, series)
					continue
				}
				assert.Equal(t, v, got[series], series)
			}
			for series := range got {
				if strings.HasPrefix(series, "lab_xds_") {
					assert.Contains(t, want, series, "a series with no events in the log")
				}
			}
			rds := func(name string) float64 {
				return got[xdsmetricstest.Series(name, map[string]string{"type": "RDS", "mode": c.mode.String(), "cache": string(c.cache)})]
			}
			assert.Positive(t, rds("lab_xds_nack_total"), "the invalid-route step's NACK")
			assert.Positive(t, rds("lab_xds_ack_total"))
			assert.Positive(t, rds("lab_xds_sent_bytes_total"))
			assert.Positive(t, rds("lab_xds_publish_to_ack_seconds_count"))
		})
	}
}
