package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/sotw"
)

// serveOptions are the flags of `lab serve`.
type serveOptions struct {
	mode          protocol.Mode
	xdsAddr       string
	nodeID        string
	inventoryPort int
	listenerPort  int
	logPath       string
	sotwVersions  string
	nackPolicy    string
	cache         frontend.Cache
	// onDemand serves the teaching state's route (VHDS, Host "quote") and/or its cluster
	// (on-demand CDS) on demand; delta only.
	onDemand resources.OnDemand
	limits   controlplane.Limits
	// maxLogSize: past it the recorder condenses NACK storms (0: never).
	maxLogSize int64
	// stormEvery is how often a storm in progress is summarized on the console.
	stormEvery time.Duration
	// quiet keeps the console to publishes and errors (no per-event lines).
	quiet bool
	// withEnvoy and withInventory start the teaching setup beside the control plane
	// (serve_env.go): Envoy, and backends v1 on inventoryPort and v2 on v2Port.
	withEnvoy, withInventory bool
	// v2Port is backend v2's port: inventoryPort+1 when 0 (the port a `port N` moving
	// the traffic to v2 names). Not a flag; tests set it to a free port.
	v2Port int
	// envoyBin is Envoy's binary for --with-envoy ("": envoy.Find's default order).
	envoyBin string
	// client is the data plane the state is shaped for and --client grpc starts: envoy
	// (the default), or grpc, grpc-go's xDS client (serve_env.go), served the proxyless
	// shape (resources.State.Proxyless).
	client string
	// grpcCommand runs the grpc client (zero: `lab grpc-client` from this executable).
	// Not a flag; tests set it.
	grpcCommand grpcclient.Command
	// metricsAddr serves Prometheus metrics there ("": off; cmd/lab/metrics.go).
	metricsAddr string
	// freePorts: every port flag not given takes a free loopback port instead of its
	// default (serve_ports.go), so serve runs beside another serve or a make lab.
	freePorts bool
	// given reports whether a flag was on the command line (cobra's Changed); nil: none.
	given func(flag string) bool
}

func defaultServeOptions() serveOptions {
	return serveOptions{
		xdsAddr:       controlplane.DefaultAddr,
		nodeID:        resources.NodeID,
		inventoryPort: 18080,
		listenerPort:  resources.DefaultListener,
		logPath:       "xds.log",
		cache:         frontend.SnapshotCache,
		client:        serveClientEnvoy,
		limits:        controlplane.DefaultLimits(),
		maxLogSize:    DefaultMaxLogSize,
		stormEvery:    5 * time.Second,
	}
}

// DefaultMaxLogSize is serve's --max-log-size: a NACK storm writes about 1.6 MB/s, so an
// unattended storm reaches it in under three minutes and then writes one line a second.
const DefaultMaxLogSize = 256 << 20

func newServeCmd() *cobra.Command {
	o := defaultServeOptions()
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

` + serveHelpFor(""),
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
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			o.given = cmd.Flags().Changed
			return runServe(ctx, o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.Var(modeValue{&o.mode}, "mode", "ADS protocol: sotw or delta (required)")
	f.Var(addrValue{p: &o.xdsAddr, allowZero: true}, "xds-addr", "gRPC listen address, 127.0.0.1:PORT (localhost means 127.0.0.1; port 0 picks a free one)")
	f.StringVar(&o.nodeID, "node-id", o.nodeID, "Envoy node ID served")
	f.Var(portValue{&o.inventoryPort, portRange}, "inventory-port", "endpoint port of cluster inventory in version 1, 1-65535")
	f.Var(portValue{&o.listenerPort, portRange}, "listener-port", "Envoy listener port, 1-65535 (--free-ports picks a free one)")
	f.StringVar(&o.logPath, "log", o.logPath, "xds.log file, appended to line by line; each serve adds a session line first")
	f.Var(byteSize{&o.maxLogSize}, "max-log-size", "past this size a NACK storm is written as one summary line per second instead of two lines per re-send (0: never)")
	f.Var(choiceValue{&o.sotwVersions, "version strategy", []string{string(frontend.Uniform), string(frontend.PerType)}}, "sotw-versions", "SotW type versions: uniform (every publish re-sends all types) or per-type (default uniform; sotw only)")
	f.Var(choiceValue{&o.nackPolicy, "NACK policy", nackPolicies()}, "nack-policy", nackPolicyHelp)
	f.Var(cacheValue{&o.cache}, "cache", cacheHelp)
	f.Var(onDemandValue{&o.onDemand}, "on-demand", "what Envoy fetches only when a request needs it: vhds (the route, for Host "+resources.QuoteHost+"), cds (the cluster), vhds,cds or none (delta only)")
	f.Var(intValue{&o.limits.MaxRecvMsgSize, serveMsgBytesRange}, "max-recv-msg-bytes", "largest request accepted, "+serveMsgBytesRange.String()+"; bigger ones fail their stream with RESOURCE_EXHAUSTED")
	f.Var(intValue{&o.limits.MaxSendMsgSize, serveMsgBytesRange}, "max-send-msg-bytes", "largest response sent, "+serveMsgBytesRange.String()+" (a SotW push of 10,000 clusters is a few MB)")
	f.Var(uint32Value{&o.limits.MaxConcurrentStreams, serveStreamsRange}, "max-concurrent-streams", "HTTP/2 streams per connection, "+serveStreamsRange.String())
	f.Var(intValue{&o.limits.MaxStreams, serveStreamsRange}, "max-streams", "ADS streams served at once in total, "+serveStreamsRange.String()+"; extra ones are refused with RESOURCE_EXHAUSTED")
	f.Var(durationValue{&o.limits.KeepaliveMinTime, serveKeepaliveRange}, "keepalive-min-time", "clients pinging more often get GOAWAY too_many_pings, "+serveKeepaliveRange.String())
	f.BoolVar(&o.quiet, "quiet", false, "print only publishes, refusals, storm warnings and errors (no line per stream, ACK or NACK)")
	f.BoolVar(&o.withEnvoy, "with-envoy", false, "also run Envoy on the bootstrap lab bootstrap renders (node "+resources.NodeID+", admin on a free port); stopped when serve ends")
	f.BoolVar(&o.withInventory, "with-inventory", false, "also run backends v1 on --inventory-port and v2 on the next port; stopped when serve ends")
	f.Var(choiceValue{&o.client, "data plane", []string{serveClientEnvoy, serveClientGRPC}}, "client",
		"the client served: envoy, or grpc (sotw only): serve the listener as grpc-go takes it (an api_listener) and run grpc-go's xDS client, its HTTP front door on --listener-port; stopped when serve ends")
	f.Var(addrValue{p: &o.metricsAddr, allowZero: true}, "metrics-addr", metricsAddrHelp)
	f.BoolVar(&o.freePorts, "free-ports", false, "pick a free 127.0.0.1 port for every port flag not given (--xds-addr, --listener-port, --inventory-port and v2's), instead of the defaults; printed first")
	return cmd
}

// Ranges of `lab serve`'s limits: each must be positive (zero would silently mean the
// library's default), and bounded so a typo cannot ask for gigabytes.
var (
	serveMsgBytesRange  = intRange{1, 1 << 30}
	serveStreamsRange   = intRange{1, 1_000_000}
	serveKeepaliveRange = durationRange{time.Millisecond, time.Hour}
)

// validate checks every option before anything starts. The flags check each value as it
// is parsed; this covers runServe's direct callers and what spans several flags.
// "localhost" in xdsAddr becomes 127.0.0.1.
func (o *serveOptions) validate() error {
	if err := checkMode(o.mode); err != nil {
		return err
	}
	addr, err := parseLoopbackAddr(o.xdsAddr, true)
	if err != nil {
		return badFlag("xds-addr", o.xdsAddr, "%v", err)
	}
	o.xdsAddr = addr
	for _, c := range []struct {
		flag string
		n    int
		r    intRange
	}{
		{"inventory-port", o.inventoryPort, portRange},
		{"listener-port", o.listenerPort, portRange},
		{"max-recv-msg-bytes", o.limits.MaxRecvMsgSize, serveMsgBytesRange},
		{"max-send-msg-bytes", o.limits.MaxSendMsgSize, serveMsgBytesRange},
		{"max-concurrent-streams", int(o.limits.MaxConcurrentStreams), serveStreamsRange},
		{"max-streams", o.limits.MaxStreams, serveStreamsRange},
	} {
		if err := c.r.check(c.n); err != nil {
			return badFlag(c.flag, strconv.Itoa(c.n), "%v", err)
		}
	}
	if err := serveKeepaliveRange.check(o.limits.KeepaliveMinTime); err != nil {
		return badFlag("keepalive-min-time", shortDuration(o.limits.KeepaliveMinTime), "%v", err)
	}
	if o.logPath == "" {
		return badFlag("log", "", "empty (want a file path)")
	}
	if o.v2Port == 0 && o.withInventory {
		if o.inventoryPort >= portRange.max {
			return badFlag("inventory-port", strconv.Itoa(o.inventoryPort), "--with-inventory serves v2 on the next port (want at most %d)", portRange.max-1)
		}
		o.v2Port = o.inventoryPort + 1
	}
	if o.cache == "" {
		o.cache = frontend.SnapshotCache
	}
	if err := checkCache(o.cache, o.mode, o.sotwVersions, o.nackPolicy); err != nil {
		return err
	}
	if err := checkOnDemand(o.onDemand, o.mode); err != nil {
		return err
	}
	if err := o.checkClient(); err != nil {
		return err
	}
	if o.mode == protocol.Delta {
		if err := sotwOnly("sotw-versions", o.sotwVersions); err != nil {
			return err
		}
		return sotwOnly("nack-policy", o.nackPolicy)
	}
	if _, err := frontend.ParseVersionStrategy(o.sotwVersions); err != nil {
		return badFlag("sotw-versions", o.sotwVersions, "unknown version strategy (want uniform or per-type)")
	}
	if _, err := sotw.ParseNackPolicy(o.nackPolicy); err != nil {
		return badFlag("nack-policy", o.nackPolicy, "unknown NACK policy (want %s)", orList(nackPolicies()))
	}
	return nil
}

// Values of serve's --client.
const (
	serveClientEnvoy = "envoy"
	serveClientGRPC  = "grpc"
)

// checkClient refuses what the grpc client cannot be served, before anything starts.
func (o *serveOptions) checkClient() error {
	switch o.client {
	case "", serveClientEnvoy:
		o.client = serveClientEnvoy
		return nil
	case serveClientGRPC:
	default:
		return badFlag("client", o.client, "unknown client (want envoy or grpc)")
	}
	switch {
	case o.mode != protocol.SotW:
		return errGRPCDelta
	case o.withEnvoy:
		return badFlag("client", o.client, "--with-envoy runs Envoy; --client grpc runs grpc-go's client instead: give one")
	}
	// On demand needs delta (checkOnDemand), which grpc-go has not: refused above.
	return nil
}

// runServe serves until ctx ends, quit or end of input. Results go to out, one line per
// publish; command errors go to errOut as one "error:" line each and change nothing.
func runServe(ctx context.Context, o serveOptions, in io.Reader, out, errOut io.Writer) (err error) {
	picked, err := o.pickFreePorts()
	if err != nil {
		return err
	}
	if err := o.validate(); err != nil {
		return err
	}
	bin, err := o.preflight()
	if err != nil {
		return err
	}
	if picked != "" {
		fmt.Fprintln(out, "free ports: "+picked)
	}
	metrics, stopMetrics, err := startMetrics(o.metricsAddr, o.mode, o.cache, out, "")
	if err != nil {
		return err
	}
	defer stopMetrics() // after the control plane stopped (deferred below, so run first)
	log, err := openServeLog(o, out, metrics.Observe)
	if err != nil {
		return err
	}
	rec := log.rec
	cp, err := controlplane.Start(ctx, o.controlPlaneOptions(rec))
	if err != nil {
		_ = log.file.Close()
		return err
	}
	log.startWatchers()
	defer func() { err = log.close(cp, err) }()

	env, err := newServeEnv(o)
	if err != nil {
		return err
	}
	// Stopped before the control plane (deferred later, runs first): Envoy's stream
	// closes while the recorder still writes.
	defer env.stop()
	sv := &serveLoop{cp: cp, acc: log.acc, rec: rec, out: out, o: o, env: env, steps: map[string]int{}}
	first := resources.State{ListenerPort: o.listenerPort, InventoryPort: o.inventoryPort, OnDemand: o.onDemand, Proxyless: o.client == serveClientGRPC}
	if env != nil {
		first.AccessLogPath = env.accessLog
	}
	if err := sv.start(ctx, first, bin, log.before); err != nil {
		return err
	}

	logWarned := false
	serveEachLine(ctx, in, out, errOut, func(text string) (stop bool) {
		cmd, perr := parseServeCommand(text)
		if perr != nil {
			fmt.Fprintf(errOut, "error: %v\n", perr)
			return false
		}
		if cmd.Verb == verbQuit {
			fmt.Fprintln(out, "stopping: quit")
			return true
		}
		sv.run(ctx, cmd, errOut)
		if e := rec.Err(); e != nil && !logWarned {
			// The server keeps serving, but the evidence is incomplete: say so once.
			logWarned = true
			fmt.Fprintf(errOut, "error: %v (xds.log is incomplete from here)\n", e)
		}
		return false
	})
	return nil
}

// preflight finds Envoy for --with-envoy and refuses a held --xds-addr port, before
// the log is touched (the control plane binds it only after the log is open, since it
// records from its first stream on).
func (o *serveOptions) preflight() (envoy.Binary, error) {
	var bin envoy.Binary
	if o.withEnvoy {
		b, err := envoy.Find(o.envoyBin)
		if err != nil {
			return bin, fmt.Errorf("--with-envoy: %w", err)
		}
		bin = b
	}
	if port, perr := loopback.ParseListenAddr(o.xdsAddr); perr == nil && port != 0 {
		l, lerr := loopback.Listen(port)
		if lerr != nil {
			return bin, fmt.Errorf("--xds-addr %s: %w", o.xdsAddr, lerr)
		}
		_ = l.Close()
	}
	return bin, nil
}

// serveLog is serve's xds.log and what watches its events as they are recorded.
type serveLog struct {
	file *os.File
	// before is the log's size when serve opened it (an earlier session's).
	before  int64
	rec     *xdslog.Recorder
	storms  *stormWatch
	console *serveConsole
	// acc is the one tally of the log's events, live: status reads what each client
	// holds here.
	acc *analysis.Accumulator
	// stopWatchers stops the storm watch and the console and waits for them.
	stopWatchers func()
}

// openServeLog opens o.logPath for appending and starts its session; every recorded
// event also goes to the tally, the storm watch, the console and metrics.
func openServeLog(o serveOptions, out io.Writer, metrics func(xdslog.Event)) (*serveLog, error) {
	// An *os.File is unbuffered: each xds.log line reaches the file as it is written.
	f, err := os.OpenFile(o.logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open xds.log: %w", err)
	}
	l := &serveLog{file: f, acc: analysis.NewAccumulator()}
	if fi, err := f.Stat(); err == nil {
		l.before = fi.Size()
	}
	l.storms = newStormWatch(out, o.stormEvery, nil, o.maxLogSize)
	l.console = newServeConsole(out, o.quiet, o.mode, serveNodeID(o.nodeID), o.cache)
	l.rec = xdslog.NewRecorder(f, o.mode, xdslog.WithLogSize(l.before), xdslog.WithMaxLogBytes(o.maxLogSize),
		xdslog.WithObserver(func(e xdslog.Event) { l.acc.Observe(e); l.storms.observe(e); l.console.observe(e); metrics(e) }))
	l.storms.logSize = l.rec.Written
	// Two serve sessions appended to one file both start at server 1, stream 1, version 1:
	// the session line keeps them apart for every reader.
	l.rec.BeginSession()
	return l, nil
}

// startWatchers runs the storm watch and the console until close.
func (l *serveLog) startWatchers() {
	stormsDone := make(chan struct{})
	stormsStopped := make(chan struct{})
	go func() {
		defer close(stormsStopped)
		l.storms.run(stormsDone)
	}()
	consoleDone := make(chan struct{})
	consoleStopped := make(chan struct{})
	go func() {
		defer close(consoleStopped)
		l.console.run(consoleDone)
	}()
	l.stopWatchers = func() {
		close(stormsDone)
		<-stormsStopped
		close(consoleDone)
		<-consoleStopped
	}
}

// close stops the control plane before closing the log (stopping writes the
// stream_close lines), then the watchers; it returns err, or else the log's own.
func (l *serveLog) close(cp *controlplane.ControlPlane, err error) error {
	cp.Stop()
	l.rec.Flush()
	l.stopWatchers()
	if e := l.rec.Err(); e != nil && err == nil {
		err = e
	}
	if e := l.file.Close(); e != nil && err == nil {
		err = fmt.Errorf("close xds.log: %w", e)
	}
	return err
}

// controlPlaneOptions is the control plane serve runs, recording to rec.
func (o *serveOptions) controlPlaneOptions(rec *xdslog.Recorder) controlplane.Options {
	return controlplane.Options{
		Mode:       o.mode,
		Addr:       o.xdsAddr,
		NodeID:     o.nodeID,
		Versions:   frontend.VersionStrategy(o.sotwVersions),
		NackPolicy: sotw.NackPolicy(o.nackPolicy),
		Cache:      o.cache,
		OnDemand:   o.onDemand,
		Recorder:   rec,
		Limits:     o.limits,
	}
}

// start publishes the first state, says where serve serves, and starts Envoy and the
// backends when asked (bin is Envoy with --with-envoy); before is the log's size when
// serve opened it.
func (sv *serveLoop) start(ctx context.Context, first resources.State, bin envoy.Binary, before int64) error {
	if err := sv.publish(ctx, first); err != nil {
		return err
	}
	printServing(sv.out, sv.o, sv.cp.Addr(), before)
	sv.printPublish()
	if sv.env != nil {
		return sv.env.start(ctx, sv.o, bin, sv.cp.Addr(), sv.out)
	}
	return nil
}

// printServing says where serve serves, from which cache, and where the log is.
func printServing(out io.Writer, o serveOptions, addr string, before int64) {
	logAbs, e := filepath.Abs(o.logPath)
	if e != nil {
		logAbs = o.logPath
	}
	cacheNote := ""
	if o.cache == frontend.LinearCache {
		cacheNote = " from a LinearCache per type (versions per type, behind a prefix of this start)"
	}
	if o.cache == frontend.IndexedCache {
		cacheNote = " from the indexed cache (versions per type, behind a prefix of this start)"
	}
	fmt.Fprintf(out, "serving %s ADS on %s for node %s%s; xds.log: %s (type help for commands)\n", o.mode, addr, serveNodeID(o.nodeID), cacheNote, logAbs)
	if before > 0 {
		fmt.Fprintf(out, "xds.log already held %s: this serve appends a new session after a session line; lab compare --session picks one\n", mib(before))
	}
}

func serveNodeID(id string) string {
	if id == "" {
		return resources.NodeID
	}
	return id
}

// serveLoop is the serve loop's state: what is published and how many versions so far.
type serveLoop struct {
	cp        *controlplane.ControlPlane
	acc       *analysis.Accumulator
	rec       *xdslog.Recorder
	out       io.Writer
	o         serveOptions
	steps     map[string]int // step name -> times used, to keep names unique
	env       *serveEnv      // nil without --with-envoy and --with-inventory
	state     resources.State
	prev, cur *resources.Set
	published int
}

// publish numbers s with the next version and publishes it; on error nothing changes.
func (sv *serveLoop) publish(ctx context.Context, s resources.State) error {
	s.Version = strconv.Itoa(sv.published + 1)
	set, err := sv.cp.Publish(ctx, s)
	if err != nil {
		return err
	}
	sv.published++
	sv.state, sv.prev, sv.cur = s, sv.cur, set
	return nil
}

func (sv *serveLoop) printPublish() {
	fmt.Fprintf(sv.out, "version %s: %s\n", sv.cur.Version, sv.cur.Describe(sv.prev))
}

func (sv *serveLoop) run(ctx context.Context, cmd serveCommand, errOut io.Writer) {
	switch cmd.Verb {
	case verbNone:
		return
	case verbHelp:
		fmt.Fprintln(sv.out, serveHelpFor(sv.o.client))
		return
	case verbRequest:
		sv.step(cmd)
		line, err := sv.env.request(ctx, sv.rec, sv.o.listenerPort, serveHost(sv.o.onDemand))
		if err != nil {
			fmt.Fprintf(errOut, "error: %v\n", err)
			return
		}
		fmt.Fprintln(sv.out, line)
		return
	case verbStatus:
		if cmd.JSON {
			sv.printStatusJSON()
		} else {
			sv.printStatus()
		}
		return
	}
	next, publish := applyServeCommand(sv.state, cmd)
	if !publish {
		return
	}
	sv.step(cmd)
	if err := sv.publish(ctx, next); err != nil {
		fmt.Fprintf(errOut, "error: %v\n", err)
		return
	}
	sv.printPublish()
}

func serveOrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// step starts an xds.log step named after the command, so lab compare can set an
// interactive session beside a run and --step can pick a command. A repeated command
// gets its count ("invalid #2"): steps with one name would merge.
func (sv *serveLoop) step(cmd serveCommand) {
	name := uniqueStep(sv.steps, cmd.String())
	sv.rec.SetStep(name)
	sv.rec.Emit(xdslog.Event{Event: xdslog.EventStep})
}

// uniqueStep counts name in seen and returns it, with its count from the second use on
// ("invalid #2"): steps with one name would merge.
func uniqueStep(seen map[string]int, name string) string {
	seen[name]++
	if n := seen[name]; n > 1 {
		return fmt.Sprintf("%s #%d", name, n)
	}
	return name
}

// serveShort cuts content hashes (delta resource versions are hashes too) to a readable prefix.
func serveShort(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return serveOrDash(s)
}

// serveMaxLine bounds one command line; longer lines are reported and skipped.
const serveMaxLine = 4096

type serveInputLine struct {
	text string
	err  error
}

// serveEachLine calls handle with each line of in until ctx ends, in ends or handle
// asks to stop, and says on out why it stopped; a line it could not read is reported
// on errOut and skipped. lab serve and lab tap read their commands alike.
func serveEachLine(ctx context.Context, in io.Reader, out, errOut io.Writer, handle func(text string) (stop bool)) {
	done := make(chan struct{})
	defer close(done)
	lines := serveReadLines(in, done)
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(out, "stopping: interrupted")
			return
		case l, ok := <-lines:
			if !ok {
				// For lab tap too: the tap of a `lab bench` that died ends with it.
				fmt.Fprintln(out, "stopping: end of input")
				return
			}
			if l.err != nil {
				fmt.Fprintf(errOut, "error: %v\n", l.err)
				continue
			}
			if handle(l.text) {
				return
			}
		}
	}
}

// serveReadLines delivers in's lines until end of input (channel closed) or until done is
// closed. A read from a terminal cannot be interrupted, so on a signal this goroutine
// may stay blocked until the process exits.
func serveReadLines(in io.Reader, done <-chan struct{}) <-chan serveInputLine {
	ch := make(chan serveInputLine)
	go func() {
		defer close(ch)
		br := bufio.NewReaderSize(in, serveMaxLine)
		for {
			b, isPrefix, err := br.ReadLine()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					select {
					case ch <- serveInputLine{err: fmt.Errorf("read commands: %w", err)}:
					case <-done:
					}
				}
				return
			}
			l := serveInputLine{text: string(b)}
			if isPrefix {
				// Skip the rest of an over-long line rather than misread its tail as a
				// command.
				for isPrefix && err == nil {
					_, isPrefix, err = br.ReadLine()
				}
				l = serveInputLine{err: fmt.Errorf("line longer than %d bytes ignored", serveMaxLine)}
			}
			select {
			case ch <- l:
			case <-done:
				return
			}
		}
	}()
	return ch
}
