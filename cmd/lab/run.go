package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/experiments/runner"
	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/sotw"
)

func newRunCmd() *cobra.Command {
	var (
		o          runner.Options
		xdsAddr    string
		invPorts   []int
		versions   string
		nackPolicy string
	)
	cmd := &cobra.Command{
		Use:   "run --mode=sotw|delta",
		Short: "Drive Envoy (or the simulated client) through every scenario step and keep the evidence",
		Long: `Starts the control plane in the chosen front end, inventory backends v1 and v2, and
Envoy with the matching bootstrap, then runs: initial, port-change, invalid-route,
recover, envoy-restart, control-plane-restart, remove-cluster, restore. Each step
publishes or restarts, waits (with a deadline) for the ACK or NACK in xds.log, then
sends requests with fresh x-request-ids through Envoy until the expected backend
answers. The run directory keeps xds.log, one checkpoint per step, Envoy's config
dumps, stats, logs and access log, both inventory logs, summary.json, envoy.result
and run.exit; they are written even when a step fails or the run is interrupted.

With --client=sim (or auto when no Envoy is found) the steps run against the simulated
client and envoy.result says NOT_RUN: no data-plane result is reported that Envoy did
not produce.`,
		Example: `  # real Envoy (install it with: make envoy)
  lab run --mode=sotw
  lab run --mode=delta --out /tmp/delta-run

  # SotW with per-type versions and no NACK re-sends
  lab run --mode=sotw --sotw-versions per-type --nack-policy hold

  # no Envoy: the simulated client (data plane NOT_RUN)
  lab run --mode=delta --client=sim

  # failure windows: a 5s control-plane outage; state changes during the reconnect
  lab run --mode=delta --outage 5s --publish-during-reconnect`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, port, err := loopback.ParseAddr(xdsAddr)
			if err != nil {
				return fmt.Errorf("--xds-addr: %w", err)
			}
			o.XDSPort = port
			if o.Outage < 0 || o.Outage > 10*time.Minute {
				return fmt.Errorf("--outage %s: want 0 to 10m", o.Outage)
			}
			if len(invPorts) != 2 {
				return fmt.Errorf("--inventory-ports takes two ports (v1,v2), got %d", len(invPorts))
			}
			o.InventoryPorts = [2]int{invPorts[0], invPorts[1]}
			for i, name := range []string{"v1", "v2"} {
				if err := loopback.ValidatePort(invPorts[i]); err != nil {
					return fmt.Errorf("--inventory-ports %s: %w", name, err)
				}
			}
			if o.Mode == "sotw" {
				if o.Versions, err = frontend.ParseVersionStrategy(versions); err != nil {
					return err
				}
				if o.NackPolicy, err = sotw.ParseNackPolicy(nackPolicy); err != nil {
					return err
				}
			} else if versions != "" || nackPolicy != "" {
				return fmt.Errorf("--sotw-versions and --nack-policy apply to --mode=sotw only")
			}
			if o.Out != "" {
				// Appending to an earlier run's xds.log would mix two runs' evidence.
				if _, err := os.Stat(filepath.Join(o.Out, "xds.log")); err == nil {
					return fmt.Errorf("--out %s already holds a run (xds.log); choose another directory", o.Out)
				}
			}
			o.Progress = cmd.OutOrStdout()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := runner.Execute(ctx, o)
			if res != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "[%s] envoy.result: %s\n[%s] evidence: %s\n", o.Mode, res.EnvoyResult, o.Mode, res.Dir)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Mode, "mode", "", "protocol: sotw or delta (required)")
	f.StringVar(&o.Client, "client", runner.ClientAuto, "data plane: envoy, sim, or auto (Envoy when found, else the simulated client)")
	f.StringVar(&o.Out, "out", "", "run directory (default experiments/evidence/<mode>/<UTC time>-<PID>)")
	f.StringVar(&versions, "sotw-versions", "", "SotW version strategy: uniform (default) or per-type")
	f.StringVar(&nackPolicy, "nack-policy", "", "SotW NACK policy: resend (default, the library's behaviour) or hold")
	f.StringVar(&o.EnvoyBin, "envoy-bin", "", "Envoy binary (default: $ENVOY_BIN, the .venv binary, envoy on PATH)")
	f.StringVar(&xdsAddr, "xds-addr", "127.0.0.1:18000", "xDS server address; only 127.0.0.1 is allowed")
	o.ListenerPort, o.AdminPort = 19000, 9901
	f.Var(portValue{p: &o.ListenerPort}, "listener-port", "Envoy listener port on 127.0.0.1")
	f.Var(portValue{p: &o.AdminPort, allowZero: true}, "admin-port", "Envoy admin port on 127.0.0.1 (0: pick a free one)")
	f.IntSliceVar(&invPorts, "inventory-ports", []int{18080, 18081}, "ports of inventory backends v1,v2")
	f.StringSliceVar(&o.Steps, "steps", nil, "run only these steps (default: all)")
	f.DurationVar(&o.StepTimeout, "step-timeout", 45*time.Second, "deadline for each step's waits")
	f.DurationVar(&o.Outage, "outage", 0, "keep the xDS server down this long in control-plane-restart, sending a request every 250ms (0: one request, then restart)")
	f.BoolVar(&o.PublishDuringReconnect, "publish-during-reconnect", false, "in control-plane-restart, publish two states while Envoy is disconnected; Envoy must end up on the newest only")
	_ = cmd.MarkFlagRequired("mode")
	return cmd
}

// portValue is a port flag: 1-65535 (and 0 when allowZero). The host is always
// 127.0.0.1, so an address is refused with a message that says so rather than a
// number-parsing error.
type portValue struct {
	p         *int
	allowZero bool
}

func (v portValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}

func (v portValue) Set(s string) error {
	if strings.Contains(s, ":") {
		return fmt.Errorf("%q is an address: give only the port, the host is always %s", s, loopback.Host)
	}
	if v.allowZero && s == "0" {
		*v.p = 0
		return nil
	}
	p, err := loopback.ParsePort(s)
	if err != nil {
		return err
	}
	*v.p = p
	return nil
}

func (portValue) Type() string { return "port" }
