package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/xds-workbench/lab/experiments/client"
	"github.com/xds-workbench/lab/experiments/inventory"
)

// dataPlane owns the run's client side: the client (Envoy, the grpc client or the
// simulated one), the inventory backends behind it, and whether the client was started
// and is meant to be running. That last bit is what tells a fault (an exit while up)
// from a stop on purpose, so every start and stop goes through here.
type dataPlane struct {
	client   client.Client
	backends *backendSet
	// accessLog is Envoy's access log, which request reads (Envoy only).
	accessLog string
	// started: the client was started once (after the first publish).
	started bool
	// up is true while the client is meant to run: an exit then is a fault.
	up bool
}

// kind names the client ("envoy", "grpc" or "simulated").
func (d *dataPlane) kind() string { return string(d.client.Kind()) }

// died reports whether the client is meant to run but its process has exited.
func (d *dataPlane) died() bool {
	if !d.up {
		return false
	}
	select {
	case <-d.client.Exited():
		return true
	default:
		return false
	}
}

// start starts the client and marks it as meant to run.
func (d *dataPlane) start(ctx context.Context) error {
	if err := d.client.Start(ctx); err != nil {
		return err
	}
	d.up = true
	return nil
}

// stop stops the client on purpose (its exit is then no fault).
func (d *dataPlane) stop(ctx context.Context) error {
	d.up = false
	return d.client.Stop(ctx)
}

// crash ends the client abruptly on purpose (restart-envoy's kill).
func (d *dataPlane) crash(ctx context.Context) error {
	d.up = false
	return d.client.Crash(ctx)
}

// pid is the client's process id (0 before it exists and for the simulated client).
func (d *dataPlane) pid() int {
	p, ok := d.client.(client.Process)
	if !ok {
		return 0
	}
	return p.PID()
}

// kill ends the client with SIGKILL (a real client's process only).
func (d *dataPlane) kill() error {
	p, ok := d.client.(client.Process)
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

// noAdmin says why the client has no Envoy admin view (what: "stats", "config dump").
func (d *dataPlane) noAdmin(what string) string {
	if d.client.Kind() == client.KindGRPC {
		return "grpc-go has no Envoy " + what + "; its own view is CSDS (the step's -csds.json)"
	}
	return "the simulated client has no " + what
}

// startCPU marks the CPU time used so far, the client's too when it shows it.
func (d *dataPlane) startCPU() cpuMark {
	m := cpuMark{self: selfCPU()}
	if ev := d.admin(); ev != nil {
		if t, pid, err := ev.CPU(); err == nil {
			m.envoy, m.envoyPID, m.envoyRead = t, pid, true
		}
	}
	return m
}

// shutdown stops the client at the end of the run, if one was made.
func (d *dataPlane) shutdown(ctx context.Context) {
	if d.client != nil {
		d.up = false
		_ = d.client.Stop(ctx)
	}
}

// stopBackends stops every backend at the end of the run.
func (d *dataPlane) stopBackends(ctx context.Context) {
	for _, b := range d.backends.all() {
		_ = b.Stop(ctx)
	}
}
