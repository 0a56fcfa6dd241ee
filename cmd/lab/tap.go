package main

import (
	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/experiments/tap"
)

func newTapCmd() *cobra.Command {
	o := tap.DefaultOptions()
	cmd := &cobra.Command{
		Use:   "tap",
		Short: "Record the ADS exchanges between Envoy and any control plane (a transparent proxy)",
		Long: `tap is a transparent ADS proxy: point Envoy's bootstrap at --listen instead of its control
plane (lab bootstrap --xds-addr LISTEN, or edit the xds cluster's address), and tap opens
one stream to --upstream per stream Envoy opens, SotW or delta as Envoy asks, and forwards
every message both ways byte for byte. It records the streams into xds.log as lab serve
does (requests with their classification, sends with per-resource content hashes, ACKs,
NACKs, stale and unmatched requests, the node ID), so lab compare reads a tap log as it
reads a run. It cannot see the upstream's state: a tap log has no publish events, and its
session line says so.

Steps: each line on stdin starts a step of that name, and end of input stops the tap (as
it stops lab serve: a parent that dies closes its end of the pipe); --window D starts one
every D instead, named w1, w2, ..., so two taps can be aligned, and stdin is not read.
Stop with SIGINT or SIGTERM (or, without --window, end of input).

When the upstream ends a stream, Envoy's stream is ended with the upstream's status (it
reconnects and backs off as with the real server); a message tap cannot decode is
forwarded unchanged and recorded as "undecodable". The log is appended to, each start
with a new session line. A log holds one protocol: should streams of the other protocol
come, they are recorded beside it (xds.log -> xds.delta.log).

Both addresses are 127.0.0.1; the upstream must be listening when tap starts.`,
		Example: `  # the workbench's control plane on 18000, the tap on 18100, Envoy on the tap
  lab serve --mode sotw &
  lab tap --listen 127.0.0.1:18100 --upstream 127.0.0.1:18000 --log tap.log
  lab bootstrap --mode sotw --xds-addr 127.0.0.1:18100 > sotw.yaml && envoy -c sotw.yaml

  # a step every 10 s, then compare the tap's log with itself or another run
  lab tap --listen 127.0.0.1:18100 --upstream 127.0.0.1:18000 --window 10s
  lab compare tap.log experiments/compare/testdata/sotw`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := interruptible(cmd)
			defer stop()
			err := tap.Run(ctx, o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			return optionRefusal(err, tapFlagOf, tap.OptionLog)
		},
	}
	f := cmd.Flags()
	f.Var(addrValue{p: &o.Listen, allowZero: true}, "listen", "where Envoy connects, 127.0.0.1:PORT (required; port 0 picks a free one)")
	f.Var(addrValue{p: &o.Upstream}, "upstream", "the control plane forwarded to, 127.0.0.1:PORT (required; checked to listen at start)")
	f.StringVar(&o.LogPath, "log", o.LogPath, "xds.log file, appended to line by line; each tap adds a session line first")
	f.Var(durationValue{&o.Window, tap.WindowRange}, "window", "start a new step every window, named w1, w2, ... ("+tap.WindowRange.String()+"; default: step names from stdin)")
	f.Var(intValue{&o.MaxRecvMsgSize, serveMsgBytesRange}, "max-recv-msg-bytes", "largest request forwarded, "+serveMsgBytesRange.String()+"; bigger ones fail their stream with RESOURCE_EXHAUSTED")
	f.Var(intValue{&o.MaxSendMsgSize, serveMsgBytesRange}, "max-send-msg-bytes", "largest response forwarded, "+serveMsgBytesRange.String())
	return cmd
}

// tapFlagOf is the flag of each option a tap refusal names (tap.Option*).
var tapFlagOf = map[string]string{
	tap.OptionListen:          "listen",
	tap.OptionUpstream:        "upstream",
	tap.OptionLog:             "log",
	tap.OptionWindow:          "window",
	tap.OptionMaxRecvMsgBytes: "max-recv-msg-bytes",
	tap.OptionMaxSendMsgBytes: "max-send-msg-bytes",
}
