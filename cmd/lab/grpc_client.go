package main

import (
	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/experiments/grpcclient"
)

// newGRPCClientCmd is the grpc client process lab run and lab serve start for --client
// grpc (experiments/grpcclient): hidden, since the workbench passes what it needs.
func newGRPCClientCmd() *cobra.Command {
	var o grpcclient.Options
	cmd := &cobra.Command{
		Use:    "grpc-client --ports-file FILE",
		Hidden: true,
		Short:  "Run grpc-go's xDS client with an HTTP front door and CSDS (started by lab run/serve --client grpc)",
		Long: `grpc-client dials the xDS target with grpc-go's own xDS client, configured by the bootstrap
JSON in $` + grpcclient.BootstrapEnv + ` (lab run and lab serve set it), and serves on
127.0.0.1: an HTTP front door, where each GET is one unary RPC through the xDS channel
(method = the URL path, request ID as metadata), and grpc-go's CSDS. It writes both
addresses to --ports-file and runs until SIGINT or SIGTERM.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := interruptible(cmd)
			defer stop()
			return grpcclient.Serve(ctx, o)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}
