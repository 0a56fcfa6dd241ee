package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/bootstrap"
)

func newBootstrapCmd() *cobra.Command {
	p := bootstrap.Params{
		NodeID:      bootstrap.DefaultNodeID,
		NodeCluster: bootstrap.DefaultNodeCluster,
		XDSAddr:     bootstrap.DefaultXDSAddr,
		AdminPort:   bootstrap.DefaultAdminPort,
	}
	var mode string
	cmd := &cobra.Command{
		Use:   "bootstrap",
		Short: "Print an Envoy bootstrap for SotW or delta ADS",
		Long: `bootstrap prints the Envoy bootstrap (YAML) for one ADS protocol. The sotw and delta
files differ only in ads_config.api_type (GRPC vs DELTA_GRPC); everything Envoy uses,
including the control plane's xds_cluster, is on 127.0.0.1.`,
		Example: `  # bootstrap for an Envoy talking SotW to lab serve --mode sotw
  lab bootstrap --mode sotw > sotw.yaml
  envoy -c sotw.yaml --disable-hot-restart

  # delta, control plane on another port, admin on a free port
  lab bootstrap --mode delta --xds-addr 127.0.0.1:18001 --admin-port 0 > delta.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := bootstrap.Render(mode, p)
			if err != nil {
				return err
			}
			if _, err := cmd.OutOrStdout().Write(out); err != nil {
				return fmt.Errorf("write bootstrap: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&mode, "mode", "", "ADS protocol: sotw or delta (required)")
	f.StringVar(&p.XDSAddr, "xds-addr", p.XDSAddr, "control plane address; only 127.0.0.1 is allowed")
	f.IntVar(&p.AdminPort, "admin-port", p.AdminPort, "Envoy admin port on 127.0.0.1; 0 picks a free one (use envoy --admin-address-path)")
	f.StringVar(&p.NodeID, "node-id", p.NodeID, "node.id; must match the control plane's --node-id")
	f.StringVar(&p.NodeCluster, "node-cluster", p.NodeCluster, "node.cluster (Envoy requires one)")
	_ = cmd.MarkFlagRequired("mode")
	return cmd
}
