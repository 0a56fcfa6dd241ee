package serve

import (
	"strings"

	"github.com/xds-workbench/lab/shared/loopback"
)

// pickFreePorts gives every port option the user did not give (Options.Given) a free
// loopback port (loopback.FreePort: reserved for this process, below the ephemeral range)
// when FreePorts is set, and returns what it picked for the console ("xDS 127.0.0.1:A,
// listener 127.0.0.1:B, ..."; "" when nothing). The listener and the backends' ports are
// in the state published, so they are picked here, not bound to port 0 later; v2 is
// picked only with WithInventory, which starts it.
func (o *Options) pickFreePorts() (string, error) {
	if !o.FreePorts {
		return "", nil
	}
	given := o.Given
	if given == nil {
		given = func(string) bool { return false }
	}
	var xds int
	ports := []struct {
		opt, what string
		p         *int
		pick      bool
	}{
		{OptionXDSAddr, "xDS", &xds, true},
		{OptionListenerPort, "listener", &o.ListenerPort, true},
		{OptionInventoryPort, "inventory v1", &o.InventoryPort, true},
		{"", "v2", &o.V2Port, o.WithInventory && !given(OptionInventoryPort)},
	}
	var picked []string
	for _, p := range ports {
		if !p.pick || (p.opt != "" && given(p.opt)) {
			continue
		}
		port, err := loopback.FreePort()
		if err != nil {
			return "", err
		}
		*p.p = port
		picked = append(picked, p.what+" "+loopback.Addr(port))
	}
	if xds != 0 {
		o.XDSAddr = loopback.Addr(xds)
	}
	return strings.Join(picked, ", "), nil
}
