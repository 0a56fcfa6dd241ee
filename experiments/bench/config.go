package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/session"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// initialStep names the initial push's sample; the changes are "update-N".
const initialStep = "initial"

// calibrationRequests is how many requests measure Envoy's CPU cost per data-plane probe,
// so a reader can tell how much of an update's Envoy CPU the probes themselves took.
const calibrationRequests = 50

// configRun is one configuration in progress.
type configRun struct {
	e *benchcore.Env
	w string
	s benchcore.Series
	n int
	// picked are the listener ports reserved for this configuration's Envoys, released
	// when they are stopped.
	picked []int
	cfg    *Config
	// ses is the configuration's control plane and its recorder (cp and rec).
	ses *session.Session
	cp  *controlplane.ControlPlane
	rec *xdslog.Recorder
	// logFile is the configuration's xds.log: unbuffered, one write per line, as the
	// recorder expects.
	logFile *os.File
	m       *benchcore.Meter
	cl      *benchcore.Clients
	// stuck are the --stuck-clients clients (nil without); xdsAddr is where they and
	// the others connect (the tap's address with a "+tap" series).
	stuck   *stuckClients
	xdsAddr string
	// tap is the ADS tap between the clients and the control plane (series "+tap").
	tap *benchTap
	// prevVersion is the version the previous step published ("" before the first).
	prevVersion string
	// targets are the states this configuration publishes: one (the simulated and
	// fan-out clients, one Envoy) or one per Envoy, each with its own listener port.
	targets []*target
}

// target is one published state: the publisher of one node and what it last published.
type target struct {
	// node is the node ID the state is served to ("" for the control plane's one node);
	// member is the Envoy (or grpc-go client) served it (nil for simulated and fan-out
	// clients).
	node   string
	pub    publish.StatePublisher
	member *benchcore.Member
	// listenerPort is the port the state puts the listener on (the default without
	// Envoy).
	listenerPort int
	// prev is the last published set (nil before the first publish).
	prev *resources.Set
}

// FleetNodeID is the node ID of Envoy i of --envoys K > 1.
func FleetNodeID(i int) string { return fmt.Sprintf("bench-envoy-%d", i) }

// GRPCNodeID is the node ID of grpc-go client i (--client grpc, any K: each grpc-go
// process has its own bootstrap and so its own node).
func GRPCNodeID(i int) string { return fmt.Sprintf("bench-grpc-%d", i) }

// runConfig measures one (workload, N, series) configuration; failures are kept in
// Config.Error so the rest of the sweep still runs and the partial figures are still
// reported.
func runConfig(ctx context.Context, e *benchcore.Env, w string, s benchcore.Series, n int) *Config {
	started := time.Now()
	cfg := &Config{
		Series: s.Name, Cache: string(s.Cache), Workload: w, Mode: s.Mode, Versions: string(s.Versions), N: n, Clients: e.Options.Clients * e.Options.Envoys,
		// Cluster 0 for the endpoint, route and listener workloads, because its route is
		// the first of the virtual host: Envoy matches routes in order, so a probe of
		// /quote/<i> costs Envoy O(i) CPU (the last route's cost is in
		// envoy_cpu_per_request_last_route_us), and hundreds of probes during one update
		// would otherwise swamp the update's own Envoy CPU. Which cluster changes does not
		// matter to either protocol. cluster-add and cluster-remove change the last one
		// (each sample names its own path).
		ChangedCluster: changedCluster(w, n),
	}
	cfg.Path = resources.ScaledPath(cfg.ChangedCluster)
	if s.Tap {
		cfg.Through = benchcore.ThroughTap
	}
	cfg.Client = e.Options.Client
	if e.Options.Clients > 1 {
		cfg.Client = benchcore.ClientAckOnly
	}
	if e.Options.Envoys > 1 {
		cfg.Envoys = e.Options.Envoys
	}
	r := &configRun{e: e, w: w, s: s, n: n, cfg: cfg}
	err := e.RunBounded(ctx, r.run, r.close)
	if err != nil {
		if r.cl != nil {
			if cerr := r.cl.Err(); cerr != nil {
				err = fmt.Errorf("%w (client: %v)", err, cerr)
			}
		}
		cfg.Error = err.Error()
	}
	cfg.Summary = summarize(cfg.Updates)
	if cfg.Envoys > 1 {
		cfg.PerProxy = perProxySummary(cfg.Updates)
	}
	cfg.DurationS = time.Since(started).Seconds()
	return cfg
}

// stem names the configuration's files: "sotw-uniform-N1000" for the endpoint workload
// (the names bench always used), "<workload>-<series>-N<N>" for the others.
func (r *configRun) stem() string {
	st := fmt.Sprintf("%s-N%d", r.s.File(), r.n)
	if r.w != benchcore.WorkloadEndpoint {
		st = r.w + "-" + st
	}
	return st
}

func (r *configRun) say(format string, args ...any) {
	r.e.Say("[%s N=%d %s] "+format, append([]any{r.w, r.n, r.s.Name}, args...)...)
}

// run starts the configuration (its log, control plane, tap and clients), publishes
// the initial state and measures every repeat; close ends what it started.
func (r *configRun) run(ctx context.Context) error {
	if err := r.openLog(); err != nil {
		return err
	}
	if err := r.start(ctx); err != nil {
		return err
	}
	// Initial state: N clusters, cluster 0 on endpoint A (workloadStep says what the
	// route and listener workloads set besides).
	init, err := r.measure(ctx, initialStep, 0)
	r.cfg.Initial = init
	if err != nil {
		return fmt.Errorf("initial state: %w", err)
	}
	r.say("initial: %s", init.brief())
	if err := r.startStuck(ctx); err != nil {
		return err
	}
	if r.e.Options.CPUProfile {
		// Only the changes: the initial push would swamp what one change costs.
		stop, err := benchcore.StartCPUProfile(filepath.Join(r.e.Options.Out, "cpu-"+r.stem()+".pprof"))
		if err != nil {
			return err
		}
		defer stop()
	}
	if len(r.cl.Members) > 0 && r.e.Options.Client == benchcore.ClientEnvoy {
		r.calibrateProbes(ctx)
	}
	if err := r.measureRepeats(ctx); err != nil {
		return err
	}
	r.cfg.StreamsOpened = r.m.StreamsOpened()
	return nil
}

// openLog creates the configuration's xds.log and its meter. The session's recorder
// writes the evidence log; the meter reads the same events as they are written, so
// figures and log cannot disagree.
func (r *configRun) openLog() error {
	logPath := filepath.Join(r.e.Options.Out, "xds-"+r.stem()+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("create xds.log: %w", err)
	}
	r.logFile = f
	r.cfg.Log = filepath.Base(logPath)
	r.m = benchcore.NewMeter()
	return nil
}

// start starts the control plane, the tap with a "+tap" series, and the clients, and
// waits until every client subscribed.
func (r *configRun) start(ctx context.Context) error {
	// Default limits: 2,048 streams cover MaxClients, and every fan-out client has its own
	// connection, so the per-connection stream limit never applies.
	opts := controlplane.Options{Mode: r.s.Mode, Addr: loopback.Addr(0), Recorder: r.rec, Cache: r.s.Cache}
	if r.s.Mode == protocol.SotW {
		opts.Versions = r.s.Versions
	}
	proxies, err := r.memberSpecs(&opts)
	if err != nil {
		return err
	}
	// The control plane lives for the configuration; Close in close ends it.
	if err := r.startSession(context.WithoutCancel(ctx), opts); err != nil {
		return err
	}
	cp := r.cp
	xdsAddr := cp.Addr()
	if r.s.Tap {
		if xdsAddr, err = r.startTapFor(cp.Addr()); err != nil {
			return err
		}
	}
	r.xdsAddr = xdsAddr
	e := r.e
	spec := benchcore.ClientSpec{Kind: r.cfg.Client, K: e.Options.Clients, Mode: r.s.Mode, XdsAddr: xdsAddr, Bin: e.Bin, Dir: e.Options.Out, Name: r.stem(), Members: proxies,
		// Envoy replaces its listener on an LDS change and drains the old one, whose
		// connections keep the old configuration meanwhile: a kept-alive probe would see
		// the old server name. Every probe of this workload opens its own connection, so
		// it reaches the listener Envoy accepts new connections on.
		FreshConnections: r.w == benchcore.WorkloadListener, StopGrace: benchcore.StopGrace(r.s.Mode, r.n), EnvoyStats: e.Options.EnvoyStats, GrpcCommand: e.Options.GRPCCommand}
	r.cl, err = benchcore.StartClients(ctx, spec)
	if err != nil {
		return err
	}
	return r.awaitSubscribed(ctx)
}

// startSession starts the configuration's session: its control plane with opts,
// recording to xds.log through the meter.
func (r *configRun) startSession(ctx context.Context, opts controlplane.Options) error {
	ses, err := session.New(session.Options{ControlPlane: opts, Log: r.logFile, Record: []xdslog.Option{xdslog.WithObserver(r.m.Observe)}})
	if err != nil {
		return err
	}
	r.ses, r.cp, r.rec = ses, ses.ControlPlane(), ses.Recorder()
	return ses.Start(ctx)
}

// startStuck connects the stuck clients once the initial state is in place and waits
// until it is theirs, then makes them stop reading. No other client opens a stream from
// then on, so the meter can tell theirs (Meter.ExpectStuck).
func (r *configRun) startStuck(ctx context.Context) error {
	k := r.e.Options.StuckClients
	if k == 0 {
		return nil
	}
	r.m.ExpectStuck(k)
	var err error
	if r.stuck, err = startStuck(ctx, r.xdsAddr, r.s.Mode, k); err != nil {
		return err
	}
	if err := r.stuck.awaitState(ctx); err != nil {
		return err
	}
	r.cfg.StuckInitialSends, r.cfg.StuckInitialBytes = r.m.SendsToStuck()
	r.stuck.stopReading()
	r.cfg.StuckClients = k
	return nil
}

// memberSpecs reserves a listener port per Envoy or grpc-go client. K Envoys on one
// machine need K listener ports, and the listener is part of the state: each Envoy gets
// a node ID and a state of its own, added to opts.Nodes (one Envoy keeps the control
// plane's one node, as the bench always ran it). grpc-go clients take the same path,
// the front door on the listener port.
func (r *configRun) memberSpecs(opts *controlplane.Options) ([]benchcore.MemberSpec, error) {
	o := r.e.Options
	if o.Client != benchcore.ClientEnvoy && o.Client != benchcore.ClientGRPC {
		return nil, nil
	}
	var proxies []benchcore.MemberSpec
	for i := 0; i < o.Envoys; i++ {
		port, err := loopback.FreePort()
		if err != nil {
			return nil, fmt.Errorf("listener port for %s %d: %w", o.Client, i, err)
		}
		r.picked = append(r.picked, port)
		ps := benchcore.MemberSpec{ListenerPort: port}
		switch {
		case o.Client == benchcore.ClientGRPC:
			ps.Node = GRPCNodeID(i)
		case o.Envoys > 1:
			ps.Node = FleetNodeID(i)
		}
		if ps.Node != "" {
			opts.Nodes = append(opts.Nodes, ps.Node)
		}
		proxies = append(proxies, ps)
	}
	return proxies, nil
}

// startTapFor starts the ADS tap in front of upstream, with its log beside the
// configuration's, and returns the address the clients connect to.
func (r *configRun) startTapFor(upstream string) (string, error) {
	tapLog := filepath.Join(r.e.Options.Out, "xds-"+r.stem()+".tap.log")
	var err error
	r.tap, err = r.startTap(upstream, tapLog)
	if err != nil {
		return "", err
	}
	r.cfg.TapLog = filepath.Base(tapLog)
	r.cfg.TapCPU = "in-process: inside cp_cpu_ms"
	if r.tap.pid() != 0 {
		r.cfg.TapCPU = "subprocess: tap_cpu_ms"
	}
	r.say("through the tap on %s -> %s (%s)", r.tap.addr, upstream, r.cfg.TapCPU)
	return r.tap.addr, nil
}

// awaitSubscribed sets the targets (the control plane's one node, or one per member)
// and waits until every client asked for its first type.
func (r *configRun) awaitSubscribed(ctx context.Context) error {
	if len(r.cl.Members) == 0 {
		r.targets = []*target{{pub: r.cp.Publisher(), listenerPort: resources.DefaultListener}}
		return r.m.WaitSubscribed(ctx, r.e.Options.Clients)
	}
	var nodes []string
	for _, p := range r.cl.Members {
		r.targets = append(r.targets, &target{node: p.Node, pub: r.cp.PublisherFor(p.Node), member: p, listenerPort: p.ListenerPort})
		r.cfg.Proxies = append(r.cfg.Proxies, proxyInfo(p))
		nodes = append(nodes, p.NodeID())
	}
	r.cfg.EnvoyLog = r.cfg.Proxies[0].EnvoyLog
	r.cfg.PollIntervalMS = benchcore.Millis(benchcore.PollEvery(len(r.cl.Members)))
	r.cfg.PollIntervalAckedMS = benchcore.Millis(benchcore.PollInterval)
	// Envoy asks for CDS at once; grpc-go asks for its listener by name and for
	// RDS, CDS and EDS only as each answer names them (the xDS resolver's
	// dependency manager: internal/xds/xdsdepmgr/xds_dependency_manager.go).
	first := "CDS"
	if r.e.Options.Client == benchcore.ClientGRPC {
		first = "LDS"
	}
	return r.m.WaitNodesSubscribed(ctx, nodes, first)
}

// calibrateProbes measures what a probe costs Envoy, on the first route and on the
// last, which shows what the linear route match costs a request at this N. A failed
// calibration leaves its figure out.
func (r *configRun) calibrateProbes(ctx context.Context) {
	if c, err := r.calibrate(ctx, resources.ScaledPath(0), calibrationRequests); err == nil {
		r.cfg.EnvoyProbeCPUUS = &c
	}
	if c, err := r.calibrate(ctx, resources.ScaledPath(r.n-1), calibrationRequests/5); err == nil {
		r.cfg.EnvoyLastRouteCPUUS = &c
	}
}

// close stops the clients and the control plane and closes the log.
func (r *configRun) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second+benchcore.StopGrace(r.s.Mode, r.n))
	defer cancel()
	var errs []error
	if r.cl != nil {
		if err := r.cl.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
		r.cfg.EnvoyExits = r.cl.Exits()
		for i, x := range r.cfg.EnvoyExits {
			who := "envoy"
			if x.GRPC {
				who = "grpc client"
			}
			r.say("%s %d/%d: %s", who, i+1, len(r.cfg.EnvoyExits), x)
		}
	}
	if r.stuck != nil {
		r.stuck.stop()
		r.cfg.StuckSends, r.cfg.StuckBytes = r.m.SendsToStuck()
	}
	// The tap before its upstream: its streams close as "tap stopped", not as refused.
	if r.tap != nil {
		if err := r.tap.stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if r.ses != nil {
		// The control plane, then the recorder's errors (the clients are stopped above).
		if err := r.ses.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if r.logFile != nil {
		if err := r.logFile.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", r.cfg.Log, err))
		}
	}
	// The Envoys that bound them are stopped (or killed) now.
	for _, p := range r.picked {
		loopback.Release(p)
	}
	return errors.Join(errs...)
}

// publish builds state for every target (each with its own listener port) and makes
// each the state served to its node: the one place a configuration turns a desired
// state into resources. It fills the sample's build and publish times, both from t0;
// it calls publishing(i) just before target i's state is handed to its publisher (its
// Envoy can change from then on: the LinearCache sends each type as it updates it, so
// an update can be ACKed before Publish returns), and published(i) once Publish has
// returned. The build is incremental (resources.Rebuild from the state served now), as
// the control plane's own Publish is: only what the step changes is built, K times for K
// nodes, and each publisher is handed that change. Every state is built before the
// first is published, so the nodes' publishes are as close together as they can be and
// the version distribution shows the protocol, not the build loop.
func (r *configRun) publish(ctx context.Context, state resources.State, t0 time.Time, s *Sample, publishing, published func(i int)) ([]*resources.Set, error) {
	sets := make([]*resources.Set, len(r.targets))
	for i, tg := range r.targets {
		st := state
		st.ListenerPort = tg.listenerPort
		// grpc-go gets the proxyless shape (an api_listener) from the same builders.
		st.Proxyless = r.e.Options.Client == benchcore.ClientGRPC
		set, err := resources.Rebuild(tg.pub.Current(), st)
		if err != nil {
			return nil, fmt.Errorf("build version %s%s: %w", state.Version, tg.forNode(), err)
		}
		sets[i] = set
	}
	s.BuildMS = benchcore.Millis(time.Since(t0))
	for i, tg := range r.targets {
		if publishing != nil {
			publishing(i)
		}
		if err := tg.pub.Publish(ctx, sets[i]); err != nil {
			return nil, fmt.Errorf("publish version %s%s: %w", state.Version, tg.forNode(), err)
		}
		if published != nil {
			published(i)
		}
	}
	s.PublishMS = benchcore.Millis(time.Since(t0))
	return sets, nil
}

// forNode names the target's node in an error (nothing for the one node).
func (tg *target) forNode() string {
	if tg.node == "" {
		return ""
	}
	return " for " + tg.node
}

// ports are where this configuration's states point (the listener is each target's).
func (r *configRun) ports() ports {
	return ports{listener: resources.DefaultListener, dead: r.e.DeadPort, unlistedEmpty: r.e.Options.Unprobed == benchcore.UnprobedNoEndpoints,
		backends: [2]int{r.e.Backends[0].Port, r.e.Backends[1].Port}}
}
