package main

import (
	"strings"

	"github.com/xds-workbench/lab/shared/loopback"
)

// pickFreePorts gives every port flag not on the command line a free loopback port
// (loopback.FreePort: reserved for this process, below the ephemeral range) when
// --free-ports is set, and returns what it picked for the console ("xDS 127.0.0.1:A,
// listener 127.0.0.1:B, ..."; "" when nothing). The listener and the backends' ports are
// in the state published, so they are picked here, not bound to port 0 later; v2 is
// picked only with --with-inventory, which starts it.
func (o *serveOptions) pickFreePorts() (string, error) {
	if !o.freePorts {
		return "", nil
	}
	given := o.given
	if given == nil {
		given = func(string) bool { return false }
	}
	var xds int
	ports := []struct {
		flag, what string
		p          *int
		pick       bool
	}{
		{"xds-addr", "xDS", &xds, true},
		{"listener-port", "listener", &o.listenerPort, true},
		{"inventory-port", "inventory v1", &o.inventoryPort, true},
		{"", "v2", &o.v2Port, o.withInventory && !given("inventory-port")},
	}
	var picked []string
	for _, p := range ports {
		if !p.pick || (p.flag != "" && given(p.flag)) {
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
		o.xdsAddr = loopback.Addr(xds)
	}
	return strings.Join(picked, ", "), nil
}
