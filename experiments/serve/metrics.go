package serve

import (
	"errors"
	"fmt"
	"io"

	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/xdsmetrics"
)

// startMetrics serves the metrics of serve's xDS exchange on o.MetricsAddr, when it is
// set, and says where on out. The metrics observe the recorder's events; with no address
// they are nil, which observes nothing. stop ends the serving.
func startMetrics(o Options, out io.Writer) (m *xdsmetrics.Metrics, stop func(), err error) {
	if o.MetricsAddr == "" {
		return nil, func() {}, nil
	}
	port, err := loopback.ParseListenAddr(o.MetricsAddr)
	if err != nil {
		var ae *loopback.AddrError
		if errors.As(err, &ae) {
			err = errors.New(ae.Problem)
		}
		return nil, nil, refuse(OptionMetricsAddr, o.MetricsAddr, err)
	}
	m = xdsmetrics.New(o.Mode, string(o.Cache))
	srv, err := xdsmetrics.Serve(loopback.Addr(port), m)
	if err != nil {
		return nil, nil, refuse(OptionMetricsAddr, o.MetricsAddr, err)
	}
	fmt.Fprintf(out, "metrics: %s\n", srv.URL())
	return m, func() { _ = srv.Close() }, nil
}
