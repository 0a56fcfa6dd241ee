package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
)

// bootstrapOptions are the flags of `lab bootstrap`.
type bootstrapOptions struct {
	mode     protocol.Mode
	p        bootstrap.Params
	onDemand resources.OnDemand
}

func newBootstrapCmd() *cobra.Command {
	o := bootstrapOptions{p: bootstrap.Params{
		NodeID:      bootstrap.DefaultNodeID,
		NodeCluster: bootstrap.DefaultNodeCluster,
		XDSAddr:     bootstrap.DefaultXDSAddr,
		AdminPort:   bootstrap.DefaultAdminPort,
	}}
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
  lab bootstrap --mode delta --xds-addr 127.0.0.1:18001 --admin-port 0 > delta.yaml

  # delta, clusters on demand: no cds_config, Envoy holds only the clusters it fetches
  lab bootstrap --mode delta --on-demand vhds,cds > on-demand.yaml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBootstrap(o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.Var(modeValue{&o.mode}, "mode", "ADS protocol: sotw or delta (required)")
	f.Var(addrValue{p: &o.p.XDSAddr}, "xds-addr", "control plane address, 127.0.0.1:PORT (localhost means 127.0.0.1)")
	f.Var(portValue{&o.p.AdminPort, portZeroRange}, "admin-port", "Envoy admin port on 127.0.0.1, 0-65535; 0 picks a free one (use envoy --admin-address-path)")
	f.StringVar(&o.p.NodeID, "node-id", o.p.NodeID, "node.id; must match the control plane's --node-id")
	f.StringVar(&o.p.NodeCluster, "node-cluster", o.p.NodeCluster, "node.cluster (Envoy requires one)")
	f.Var(onDemandValue{&o.onDemand}, "on-demand", "what Envoy fetches on demand: vhds, cds, vhds,cds or none (delta only; cds leaves out cds_config, vhds changes nothing in the bootstrap: it is in the route configuration)")
	return cmd
}

// runBootstrap renders the bootstrap and writes it whole, or nothing.
func runBootstrap(o bootstrapOptions, out io.Writer) error {
	if err := checkMode(o.mode); err != nil {
		return err
	}
	if err := checkOnDemand(o.onDemand, o.mode); err != nil {
		return err
	}
	o.p.OnDemandClusters = o.onDemand.Clusters
	b, err := bootstrap.Render(o.mode, o.p)
	if err != nil {
		return err
	}
	if _, err := out.Write(b); err != nil {
		return fmt.Errorf("write bootstrap: %w", err)
	}
	return nil
}
