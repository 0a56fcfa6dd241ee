package churn

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/session"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/sotw"
)

// ClientNode is the node ID of every simulated client; each Envoy has a node of its own
// (EnvoyNode), so that its listener port, part of the state, is its own.
const ClientNode = "churn-clients"

// EnvoyNode is the node ID of the i-th Envoy.
func EnvoyNode(i int) string { return "churn-envoy-" + strconv.Itoa(i) }

// plane is one control plane of the soak: one mode, its xds.log, and the listener port
// of each node it serves.
type plane struct {
	mode  protocol.Mode
	ses   *session.Session
	cp    *controlplane.ControlPlane
	log   *os.File
	path  string
	ports map[string]int
}

// startPlane starts the control plane of mode on 127.0.0.1:0 serving ClientNode and
// envoyNodes, recording to xds-<mode>.log in dir. SotW versions are per type, so an
// endpoint change sends EDS alone (with uniform versions every type would be re-sent).
func startPlane(ctx context.Context, mode protocol.Mode, dir string, envoyNodes []string) (*plane, error) {
	p := &plane{mode: mode, path: filepath.Join(dir, "xds-"+mode.String()+".log"), ports: map[string]int{}}
	var err error
	if p.log, err = os.Create(p.path); err != nil {
		return nil, fmt.Errorf("churn %s: %w", mode, err)
	}
	opts := controlplane.Options{Mode: mode, Addr: "127.0.0.1:0", Nodes: append([]string{ClientNode}, envoyNodes...)}
	if mode == protocol.SotW {
		opts.Versions, opts.NackPolicy = publish.PerType, sotw.Resend
	}
	for _, n := range opts.Nodes {
		if p.ports[n], err = loopback.FreePort(); err != nil {
			p.log.Close()
			return nil, fmt.Errorf("churn %s: listener port: %w", mode, err)
		}
	}
	if p.ses, err = session.New(session.Options{ControlPlane: opts, Log: p.log}); err == nil {
		err = p.ses.Start(ctx)
	}
	if err != nil {
		if p.ses != nil {
			_ = p.ses.Close(context.Background())
		}
		p.log.Close()
		return nil, fmt.Errorf("churn: %w", err)
	}
	p.cp = p.ses.ControlPlane()
	if err := p.publish(ctx, 1); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// publish makes change n the state of every node: the inventory endpoint's port flips
// between two values, so every change is one EDS resource modified.
func (p *plane) publish(ctx context.Context, n int) error {
	for node, port := range p.ports {
		pub := p.cp.PublisherFor(node)
		s := resources.State{Version: strconv.Itoa(n), ListenerPort: port, InventoryPort: 18100 + n%2}
		set, err := resources.Rebuild(pub.Current(), s)
		if err == nil {
			err = pub.Publish(ctx, set)
		}
		if err != nil {
			return fmt.Errorf("churn %s: publish %d to %s: %w", p.mode, n, node, err)
		}
	}
	return nil
}

// stop stops the control plane (every stream closed and recorded) and closes its log.
func (p *plane) stop() {
	_ = p.ses.Close(context.Background())
	p.log.Close()
}

// logSize is the log's size in bytes now.
func (p *plane) logSize() int64 {
	fi, err := os.Stat(p.path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// publishLoop publishes change 2, 3, ... at rate per second to every plane until ctx
// ends, and counts them in done.
func publishLoop(ctx context.Context, planes []*plane, rate int, done func()) error {
	t := time.NewTicker(time.Second / time.Duration(rate))
	defer t.Stop()
	for n := 2; ; n++ {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		for _, p := range planes {
			if err := p.publish(ctx, n); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
		done()
	}
}
