package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/experiments/serve"
	"github.com/xds-workbench/lab/shared/option"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/sotw"
)

func newServeCmd() *cobra.Command { return newServeCmdWith(serve.Run) }

// serveRun is what `lab serve` runs once its flags are parsed (serve.Run; tests give
// their own).
type serveRun func(ctx context.Context, o serve.Options, in io.Reader, out, errOut io.Writer) error

// newServeCmdWith is `lab serve` running run: it parses the flags into serve.Options and
// words run's refusals as flag errors (serveRefusal).
func newServeCmdWith(run serveRun) *cobra.Command {
	o := serve.DefaultOptions()
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve Envoy over ADS (SotW or delta) and change the state from stdin",
		Long: `serve runs the teaching control plane: one ADS front end, SotW or delta, on 127.0.0.1.
It publishes version 1 (a valid route to cluster "inventory" at 127.0.0.1:<inventory-port>)
and then reads commands from stdin, one per line; each state command publishes the next
version (2, 3, ...). Every publish, send, ACK and NACK is appended to the xds.log file.
End of input, quit, SIGINT or SIGTERM stop the server.

The console shows one line per event that matters, read from the recorded events: a
stream opened (node ID, peer, protocol), each ACK with its version, the first NACK of
a content with its reason, refused streams with the fix, stale and unsubscribe requests,
a stream closed with the sends it never answered, and NACK storm summaries. --quiet keeps
publishes, refusals, storm warnings and errors only.

` + serve.Help(""),
		Example: `  # SotW, then Envoy with the bootstrap lab bootstrap renders (bootstrap/*.yaml are
  # templates Envoy cannot load)
  lab serve --mode sotw
  lab bootstrap --mode sotw > sotw.yaml && envoy -c sotw.yaml --disable-hot-restart

  # the whole teaching setup: Envoy and the backends v1 (18080) and v2 (18081) too
  lab serve --mode sotw --with-envoy --with-inventory

  # delta on another port, with its own log
  lab serve --mode delta --xds-addr 127.0.0.1:18001 --log delta.log

  # delta with the route and the cluster on demand: Envoy fetches them on the first
  # request for Host quote (curl -H 'Host: quote' 127.0.0.1:19000/quote)
  lab serve --mode delta --on-demand vhds,cds --with-envoy --with-inventory

  # SotW that re-sends only the types whose content changed, and holds after a NACK
  lab serve --mode sotw --sotw-versions per-type --nack-policy hold

  # beside another serve or a make lab: every port free, printed first
  lab serve --mode sotw --with-envoy --with-inventory --free-ports`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := interruptible(cmd)
			defer stop()
			o.Given = func(opt string) bool { return cmd.Flags().Changed(serveFlagOf[opt]) }
			err := run(ctx, o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			return serveRefusal(err, o)
		},
	}
	f := cmd.Flags()
	f.Var(modeValue{&o.Mode}, "mode", "ADS protocol: sotw or delta (required)")
	f.Var(addrValue{p: &o.XDSAddr, allowZero: true}, "xds-addr", "gRPC listen address, 127.0.0.1:PORT (localhost means 127.0.0.1; port 0 picks a free one)")
	f.StringVar(&o.NodeID, "node-id", o.NodeID, "Envoy node ID served")
	f.Var(portValue{&o.InventoryPort, portRange}, "inventory-port", "endpoint port of cluster inventory in version 1, 1-65535")
	f.Var(portValue{&o.ListenerPort, portRange}, "listener-port", "Envoy listener port, 1-65535 (--free-ports picks a free one)")
	f.StringVar(&o.LogPath, "log", o.LogPath, "xds.log file, appended to line by line; each serve adds a session line first")
	f.Var(byteSize{&o.MaxLogSize}, "max-log-size", "past this size a NACK storm is written as one summary line per second instead of two lines per re-send (0: never)")
	f.Var(choiceValue{&o.SotWVersions, "version strategy", []string{string(publish.Uniform), string(publish.PerType)}}, "sotw-versions", "SotW type versions: uniform (every publish re-sends all types) or per-type (default uniform; sotw only)")
	f.Var(choiceValue{&o.NackPolicy, "NACK policy", sotw.PolicyNames()}, "nack-policy", nackPolicyHelp)
	f.Var(cacheValue{&o.Cache}, "cache", cacheHelp)
	f.Var(onDemandValue{&o.OnDemand}, "on-demand", "what Envoy fetches only when a request needs it: vhds (the route, for Host "+resources.QuoteHost+"), cds (the cluster), vhds,cds or none (delta only)")
	f.Var(intValue{&o.Limits.MaxRecvMsgSize, serveMsgBytesRange}, "max-recv-msg-bytes", "largest request accepted, "+serveMsgBytesRange.String()+"; bigger ones fail their stream with RESOURCE_EXHAUSTED")
	f.Var(intValue{&o.Limits.MaxSendMsgSize, serveMsgBytesRange}, "max-send-msg-bytes", "largest response sent, "+serveMsgBytesRange.String()+" (a SotW push of 10,000 clusters is a few MB)")
	f.Var(uint32Value{&o.Limits.MaxConcurrentStreams, serveStreamsRange}, "max-concurrent-streams", "HTTP/2 streams per connection, "+serveStreamsRange.String())
	f.Var(intValue{&o.Limits.MaxStreams, serveStreamsRange}, "max-streams", "ADS streams served at once in total, "+serveStreamsRange.String()+"; extra ones are refused with RESOURCE_EXHAUSTED")
	f.Var(durationValue{&o.Limits.KeepaliveMinTime, serveKeepaliveRange}, "keepalive-min-time", "clients pinging more often get GOAWAY too_many_pings, "+serveKeepaliveRange.String())
	f.BoolVar(&o.Quiet, "quiet", o.Quiet, "print only publishes, refusals, storm warnings and errors (no line per stream, ACK or NACK)")
	f.BoolVar(&o.WithEnvoy, "with-envoy", o.WithEnvoy, "also run Envoy on the bootstrap lab bootstrap renders (node "+resources.NodeID+", admin on a free port); stopped when serve ends")
	f.BoolVar(&o.WithInventory, "with-inventory", o.WithInventory, "also run backends v1 on --inventory-port and v2 on the next port; stopped when serve ends")
	f.Var(choiceValue{&o.Client, "data plane", []string{serve.ClientEnvoy, serve.ClientGRPC}}, "client",
		"the client served: envoy, or grpc (sotw only): serve the listener as grpc-go takes it (an api_listener) and run grpc-go's xDS client, its HTTP front door on --listener-port; stopped when serve ends")
	f.Var(addrValue{p: &o.MetricsAddr, allowZero: true}, "metrics-addr", metricsAddrHelp)
	f.BoolVar(&o.FreePorts, "free-ports", o.FreePorts, "pick a free 127.0.0.1 port for every port flag not given (--xds-addr, --listener-port, --inventory-port and v2's), instead of the defaults; printed first")
	return cmd
}

// Ranges of `lab serve`'s limits, as experiments/serve bounds them.
var (
	serveMsgBytesRange  = intRange{serve.MsgBytesRange.Min, serve.MsgBytesRange.Max}
	serveStreamsRange   = intRange{serve.StreamsRange.Min, serve.StreamsRange.Max}
	serveKeepaliveRange = durationRange{Min: serve.KeepaliveRange.Min, Max: serve.KeepaliveRange.Max}
)

// serveFlagOf is the flag of each option a serve refusal names (serve.Option*): serve
// knows options, only the CLI knows flags.
var serveFlagOf = map[string]string{
	serve.OptionMode:                 "mode",
	serve.OptionXDSAddr:              "xds-addr",
	serve.OptionInventoryPort:        "inventory-port",
	serve.OptionListenerPort:         "listener-port",
	serve.OptionLog:                  "log",
	serve.OptionSotWVersions:         "sotw-versions",
	serve.OptionNackPolicy:           "nack-policy",
	serve.OptionCache:                "cache",
	serve.OptionOnDemand:             "on-demand",
	serve.OptionMaxRecvMsgBytes:      "max-recv-msg-bytes",
	serve.OptionMaxSendMsgBytes:      "max-send-msg-bytes",
	serve.OptionMaxConcurrentStreams: "max-concurrent-streams",
	serve.OptionMaxStreams:           "max-streams",
	serve.OptionKeepaliveMinTime:     "keepalive-min-time",
	serve.OptionClient:               "client",
	serve.OptionWithEnvoy:            "with-envoy",
	serve.OptionMetricsAddr:          "metrics-addr",
}

// serveRefusal words a refusal of experiments/serve as `lab serve` prints it: on the flag
// of the option it names, "--flag VALUE: what is wrong", the rules between options
// naming the other option's flag. o is what was run; other errors pass unchanged.
func serveRefusal(err error, o serve.Options) error {
	var oe *option.Error
	if !errors.As(err, &oe) {
		return err
	}
	flag, ok := serveFlagOf[oe.Option]
	if !ok {
		return err
	}
	if worded := serveWordedElsewhere(oe, o); worded != nil {
		return worded
	}
	switch {
	case oe.Option == serve.OptionKeepaliveMinTime:
		return badFlag(flag, option.ShortDuration(o.Limits.KeepaliveMinTime), "outside %s", serveKeepaliveRange)
	case errors.Is(oe, serve.ErrNoRoomForV2):
		return badFlag(flag, oe.Value, "--with-inventory serves v2 on the next port (want at most %d)", portRange.max-1)
	case errors.Is(oe, serve.ErrSotWOnly):
		return sotwOnly(flag, oe.Value)
	case errors.Is(oe, grpcclient.ErrNoDelta):
		return errGRPCDelta
	case errors.Is(oe, serve.ErrGRPCWithEnvoy):
		return badFlag(flag, oe.Value, "--with-envoy runs Envoy; --client grpc runs grpc-go's client instead: give one")
	case oe.Value == "" && oe.Option != serve.OptionLog:
		return fmt.Errorf("--%s: %w", flag, oe.Err)
	}
	return &flagError{flag: flag, value: oe.Value, err: oe.Err}
}

// serveWordedElsewhere is the refusal of the mode and of the cache's rules as every
// command words them (checkMode, checkCache); nil when oe is neither.
func serveWordedElsewhere(oe *option.Error, o serve.Options) error {
	if o.Cache == "" {
		o.Cache = publish.SnapshotCache
	}
	switch {
	case oe.Option == serve.OptionMode:
		return checkMode(o.Mode)
	case errors.Is(oe, serve.ErrUnknownCache), errors.Is(oe, controlplane.ErrUniformNeedsSnapshot),
		errors.Is(oe, controlplane.ErrResendNeedsSnapshot), errors.Is(oe, controlplane.ErrBackoffNeedsSnapshot):
		return checkCache(o.Cache, o.Mode, o.SotWVersions, o.NackPolicy)
	}
	return nil
}
