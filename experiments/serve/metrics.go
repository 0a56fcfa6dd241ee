package serve

import (
	"errors"
	"io"

	"github.com/xds-workbench/lab/shared/option"
	"github.com/xds-workbench/lab/shared/xdsmetrics"
)

// startMetrics serves the metrics of serve's xDS exchange on o.MetricsAddr, when it is
// set (xdsmetrics.Start), refusing the address as OptionMetricsAddr.
func startMetrics(o Options, out io.Writer) (m *xdsmetrics.Metrics, stop func(), err error) {
	m, stop, err = xdsmetrics.Start(o.MetricsAddr, o.Mode, string(o.Cache), out, "")
	var oe *option.Error
	if errors.As(err, &oe) {
		return nil, nil, refuse(OptionMetricsAddr, oe.Value, oe.Err)
	}
	return m, stop, err
}
