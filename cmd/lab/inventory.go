package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/experiments/inventory"
)

func newInventoryCmd() *cobra.Command {
	var (
		name    string
		port    int
		logPath string
		bh      inventory.Behaviour
	)
	cmd := &cobra.Command{
		Use:   "inventory",
		Short: "Run an inventory backend (the upstream Envoy routes /quote to)",
		Long: `inventory serves GET /quote?sku=... on 127.0.0.1:<port> until SIGINT or SIGTERM. The JSON
answer names the backend, so a response shows which backend served it; each request is
also appended as one JSON line to the log (default inventory-<name>.log, --log "" for none).
It speaks HTTP/1.1 and HTTP/2 with prior knowledge on the same port, and gRPC over that
HTTP/2 for a proxyless gRPC client: any method under /quote answers the same quote.

To show what old upstream connections do while a change lands (and to switch it off):
--delay holds every answer, so requests already routed to an endpoint EDS removes are
still in flight when the update arrives; --connection-close answers "Connection: close"
(HTTP/2: GOAWAY), so Envoy reuses no upstream connection; --idle-timeout closes idle
keep-alive connections.`,
		Example: `  # the backend of version 1 of the teaching state
  lab inventory --name v1 --port 18080

  # a second backend to move the endpoint to, with its own log
  lab inventory --name v2 --port 18081 --log v2.log

  curl -H 'x-request-id: r1' 'http://127.0.0.1:18080/quote?sku=paper'

  # answers held 200 ms, and no connection kept after an answer
  lab inventory --name v1 --delay 200ms --connection-close`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("log") {
				logPath = "inventory-" + name + ".log"
			}
			ctx, stop := interruptible(cmd)
			defer stop()
			err := inventory.Serve(ctx, name, port, logPath, bh, cmd.OutOrStdout())
			return optionRefusal(err, map[string]string{inventory.OptionDelay: "delay", inventory.OptionIdleTimeout: "idle-timeout"})
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "v1", "backend name, echoed in every answer")
	port = 18080
	f.Var(portValue{&port, portZeroRange}, "port", "port on 127.0.0.1, 0-65535 (0 picks a free one)")
	f.StringVar(&logPath, "log", "", `request log, one JSON line per request (default "inventory-<name>.log"; "" for none)`)
	f.DurationVar(&bh.Delay, "delay", 0, fmt.Sprintf("hold every answer this long (0..%s)", inventory.MaxDelay))
	f.BoolVar(&bh.ConnectionClose, "connection-close", false, `answer "Connection: close" (HTTP/2: GOAWAY): no connection is reused`)
	f.DurationVar(&bh.IdleTimeout, "idle-timeout", 0, "close a keep-alive connection idle this long (0: never)")
	return cmd
}
