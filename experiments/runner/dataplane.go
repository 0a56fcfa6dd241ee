package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/xds-workbench/lab/experiments/inventory"
)

// dataPlane owns the run's client side: the proxy (Envoy, the grpc client or the
// simulated one), the inventory backends behind it, and whether the proxy was started
// and is meant to be running. That last bit is what tells a fault (an exit while up)
// from a stop on purpose, so every start and stop goes through here.
type dataPlane struct {
	proxy    proxy
	backends *backendSet
	// started: the proxy was started once (after the first publish).
	started bool
	// up is true while the proxy is meant to run: an exit then is a fault.
	up bool
}

// died reports whether the proxy is meant to run but its process has exited.
func (d *dataPlane) died() bool {
	if !d.up {
		return false
	}
	select {
	case <-d.proxy.Exited():
		return true
	default:
		return false
	}
}

// start starts the proxy and marks it as meant to run.
func (d *dataPlane) start(ctx context.Context) error {
	if err := d.proxy.Start(ctx); err != nil {
		return err
	}
	d.up = true
	return nil
}

// stop stops the proxy on purpose (its exit is then no fault).
func (d *dataPlane) stop(ctx context.Context) error {
	d.up = false
	return d.proxy.Stop(ctx)
}

// crash ends the proxy abruptly on purpose (restart-envoy's kill).
func (d *dataPlane) crash(ctx context.Context) error {
	d.up = false
	return d.proxy.Crash(ctx)
}

// pid is the proxy's process id (0 before it exists and for the simulated client).
func (d *dataPlane) pid() int {
	if d.proxy == nil {
		return 0
	}
	return d.proxy.PID()
}

// kill ends the proxy with SIGKILL (a real client's process only).
func (d *dataPlane) kill() error {
	p, ok := d.proxy.(interface{ Kill() error })
	if !ok {
		return errors.New("kill: the data plane is simulated")
	}
	return p.Kill()
}

// stopBackend stops the backend called name and returns a function that starts it
// again on the same port, logging to the same file.
func (d *dataPlane) stopBackend(ctx context.Context, name string) (restart func() error, err error) {
	for _, b := range d.backends.all() {
		if b.Name() != name {
			continue
		}
		port, log := b.Port(), b.LogPath()
		if err := b.Stop(ctx); err != nil {
			return nil, err
		}
		return func() error {
			nb, err := inventory.StartWith(name, port, log, b.Behaviour())
			if err != nil {
				return fmt.Errorf("restart inventory %s: %w", name, err)
			}
			d.backends.replace(nb)
			return nil
		}, nil
	}
	return nil, fmt.Errorf("no backend %q", name)
}

// noAdmin says why the proxy has no Envoy admin view (what: "stats", "config dump").
func (d *dataPlane) noAdmin(what string) string {
	if d.proxy.Kind() == ClientGRPC {
		return "grpc-go has no Envoy " + what + "; its own view is CSDS (the step's -csds.json)"
	}
	return "the simulated client has no " + what
}

// startCPU marks the CPU time used so far, the proxy's too when it shows it.
func (d *dataPlane) startCPU() cpuMark {
	m := cpuMark{self: selfCPU()}
	if ev := d.proxy.Evidence(); ev != nil {
		if t, pid, err := ev.CPU(); err == nil {
			m.envoy, m.envoyPID, m.envoyRead = t, pid, true
		}
	}
	return m
}

// shutdown stops the proxy at the end of the run, if one was made.
func (d *dataPlane) shutdown(ctx context.Context) {
	if d.proxy != nil {
		d.up = false
		_ = d.proxy.Stop(ctx)
	}
}

// stopBackends stops every backend at the end of the run.
func (d *dataPlane) stopBackends(ctx context.Context) {
	for _, b := range d.backends.all() {
		_ = b.Stop(ctx)
	}
}
