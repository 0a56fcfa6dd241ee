package xdsmetrics

import (
	"fmt"
	"io"

	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/option"
	"github.com/xds-workbench/lab/shared/protocol"
)

// OptionAddr is the option an *option.Error from Start names: the metrics address.
const OptionAddr = "metrics addr"

// Start serves the metrics of an xDS exchange (mode, cache; "" is the snapshot cache)
// on addr, 127.0.0.1:PORT (port 0 picks a free one), when addr is set, and says where on
// out after prefix. The metrics observe the recorder's events (give Observe to
// xdslog.WithObserver); with addr empty they are nil, which observes nothing. stop ends
// the serving. A refused or unusable address is an *option.Error naming OptionAddr.
func Start(addr string, mode protocol.Mode, cache string, out io.Writer, prefix string) (m *Metrics, stop func(), err error) {
	if addr == "" {
		return nil, func() {}, nil
	}
	a, err := loopback.Normalize(addr, true)
	if err != nil {
		return nil, nil, &option.Error{Option: OptionAddr, Value: addr, Err: err}
	}
	if cache == "" {
		cache = "snapshot"
	}
	m = New(mode, cache)
	srv, err := Serve(a, m)
	if err != nil {
		return nil, nil, &option.Error{Option: OptionAddr, Value: addr, Err: err}
	}
	fmt.Fprintf(out, "%smetrics: %s\n", prefix, srv.URL())
	return m, func() { _ = srv.Close() }, nil
}
