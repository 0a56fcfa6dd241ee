package main

import (
	"fmt"
	"os"
	"os/signal"
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
  lab run --mode=delta --client=sim`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, port, err := loopback.ParseAddr(xdsAddr)
			if err != nil {
				return fmt.Errorf("--xds-addr: %w", err)
			}
			o.XDSPort = port
			if len(invPorts) != 2 {
				return fmt.Errorf("--inventory-ports takes two ports (v1,v2), got %d", len(invPorts))
			}
			o.InventoryPorts = [2]int{invPorts[0], invPorts[1]}
			for name, p := range map[string]int{"--listener-port": o.ListenerPort, "--admin-port": o.AdminPort, "--inventory-ports v1": invPorts[0], "--inventory-ports v2": invPorts[1]} {
				if err := loopback.ValidatePort(p); err != nil && !(name == "--admin-port" && p == 0) {
					return fmt.Errorf("%s: %w", name, err)
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
	f.StringVar(&xdsAddr, "xds-addr", "127.0.0.1:18000", "xDS server address (loopback only)")
	f.IntVar(&o.ListenerPort, "listener-port", 19000, "Envoy listener port")
	f.IntVar(&o.AdminPort, "admin-port", 9901, "Envoy admin port on 127.0.0.1 (0: pick a free one)")
	f.IntSliceVar(&invPorts, "inventory-ports", []int{18080, 18081}, "ports of inventory backends v1,v2")
	f.StringSliceVar(&o.Steps, "steps", nil, "run only these steps (default: all)")
	f.DurationVar(&o.StepTimeout, "step-timeout", 45*time.Second, "deadline for each step's waits")
	_ = cmd.MarkFlagRequired("mode")
	return cmd
}
