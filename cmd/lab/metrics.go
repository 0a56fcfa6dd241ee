package main

import (
	"fmt"
	"io"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/xdsmetrics"
)

// metricsAddrHelp is --metrics-addr's usage line (lab serve, lab run).
const metricsAddrHelp = "serve Prometheus metrics of the xDS exchange at http://ADDR/metrics, 127.0.0.1:PORT (port 0 picks a free one; default off; docs/metrics.md)"

// startMetrics serves the metrics of a command's xDS exchange on addr, when it is set, and
// says where on out. The metrics observe the recorder's events (give Observe to
// xdslog.WithObserver); with addr empty they are nil, which observes nothing. stop ends
// the serving.
func startMetrics(addr string, mode protocol.Mode, cache publish.Cache, out io.Writer, prefix string) (m *xdsmetrics.Metrics, stop func(), err error) {
	if addr == "" {
		return nil, func() {}, nil
	}
	a, err := parseLoopbackAddr(addr, true)
	if err != nil {
		return nil, nil, badFlag("metrics-addr", addr, "%v", err)
	}
	if cache == "" {
		cache = publish.SnapshotCache
	}
	m = xdsmetrics.New(mode, string(cache))
	srv, err := xdsmetrics.Serve(a, m)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	fmt.Fprintf(out, "%smetrics: %s\n", prefix, srv.URL())
	return m, func() { _ = srv.Close() }, nil
}
