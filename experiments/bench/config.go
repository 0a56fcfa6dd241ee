package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/xds-workbench/lab/experiments/childproc"
	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/session"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// calibrationRequests is how many requests measure Envoy's CPU cost per data-plane probe,
// so a reader can tell how much of an update's Envoy CPU the probes themselves took.
const calibrationRequests = 50

// configRun is one configuration in progress.
type configRun struct {
	e *env
	w string
	s series
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
	m       *meter
	cl      *clients
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
	member *member
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
func (e *env) runConfig(ctx context.Context, w string, s series, n int) *Config {
	started := time.Now()
	cfg := &Config{
		Series: s.name, Cache: string(s.cache), Workload: w, Mode: s.mode, Versions: string(s.versions), N: n, Clients: e.o.Clients * e.o.Envoys,
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
	if s.tap {
		cfg.Through = ThroughTap
	}
	cfg.Client = e.o.Client
	if e.o.Clients > 1 {
		cfg.Client = clientAckOnly
	}
	if e.o.Envoys > 1 {
		cfg.Envoys = e.o.Envoys
	}
	r := &configRun{e: e, w: w, s: s, n: n, cfg: cfg}
	err := e.runBounded(ctx, r.run, r.close)
	if err != nil {
		if r.cl != nil {
			if cerr := r.cl.err(); cerr != nil {
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
	st := fmt.Sprintf("%s-N%d", r.s.file(), r.n)
	if r.w != WorkloadEndpoint {
		st = r.w + "-" + st
	}
	return st
}

func (r *configRun) say(format string, args ...any) {
	r.e.say("[%s N=%d %s] "+format, append([]any{r.w, r.n, r.s.name}, args...)...)
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
	init, err := r.measure(ctx, "initial", 0)
	r.cfg.Initial = init
	if err != nil {
		return fmt.Errorf("initial state: %w", err)
	}
	r.say("initial: %s", init.brief())
	if err := r.startStuck(ctx); err != nil {
		return err
	}
	if r.e.o.CPUProfile {
		// Only the changes: the initial push would swamp what one change costs.
		stop, err := startCPUProfile(filepath.Join(r.e.o.Out, "cpu-"+r.stem()+".pprof"))
		if err != nil {
			return err
		}
		defer stop()
	}
	if len(r.cl.members) > 0 && r.e.o.Client == ClientEnvoy {
		r.calibrateProbes(ctx)
	}
	if err := r.measureRepeats(ctx); err != nil {
		return err
	}
	r.cfg.StreamsOpened = r.m.streamsOpened()
	return nil
}

// openLog creates the configuration's xds.log and its meter. The session's recorder
// writes the evidence log; the meter reads the same events as they are written, so
// figures and log cannot disagree.
func (r *configRun) openLog() error {
	logPath := filepath.Join(r.e.o.Out, "xds-"+r.stem()+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("create xds.log: %w", err)
	}
	r.logFile = f
	r.cfg.Log = filepath.Base(logPath)
	r.m = newMeter()
	return nil
}

// start starts the control plane, the tap with a "+tap" series, and the clients, and
// waits until every client subscribed.
func (r *configRun) start(ctx context.Context) error {
	// Default limits: 2,048 streams cover MaxClients, and every fan-out client has its own
	// connection, so the per-connection stream limit never applies.
	opts := controlplane.Options{Mode: r.s.mode, Addr: loopback.Addr(0), Recorder: r.rec, Cache: r.s.cache}
	if r.s.mode == protocol.SotW {
		opts.Versions = r.s.versions
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
	if r.s.tap {
		if xdsAddr, err = r.startTapFor(cp.Addr()); err != nil {
			return err
		}
	}
	r.xdsAddr = xdsAddr
	e := r.e
	spec := clientSpec{kind: r.cfg.Client, k: e.o.Clients, mode: r.s.mode, xdsAddr: xdsAddr, bin: e.bin, dir: e.o.Out, name: r.stem(), members: proxies,
		// Envoy replaces its listener on an LDS change and drains the old one, whose
		// connections keep the old configuration meanwhile: a kept-alive probe would see
		// the old server name. Every probe of this workload opens its own connection, so
		// it reaches the listener Envoy accepts new connections on.
		freshConnections: r.w == WorkloadListener, stopGrace: stopGrace(r.s.mode, r.n), envoyStats: e.o.EnvoyStats, grpcCommand: e.o.GRPCCommand}
	r.cl, err = startClients(ctx, spec)
	if err != nil {
		return err
	}
	return r.awaitSubscribed(ctx)
}

// startSession starts the configuration's session: its control plane with opts,
// recording to xds.log through the meter.
func (r *configRun) startSession(ctx context.Context, opts controlplane.Options) error {
	ses, err := session.New(session.Options{ControlPlane: opts, Log: r.logFile, Record: []xdslog.Option{xdslog.WithObserver(r.m.observe)}})
	if err != nil {
		return err
	}
	r.ses, r.cp, r.rec = ses, ses.ControlPlane(), ses.Recorder()
	return ses.Start(ctx)
}

// startStuck connects the stuck clients once the initial state is in place and waits
// until it is theirs, then makes them stop reading. No other client opens a stream from
// then on, so the meter can tell theirs (meter.expectStuck).
func (r *configRun) startStuck(ctx context.Context) error {
	k := r.e.o.StuckClients
	if k == 0 {
		return nil
	}
	r.m.expectStuck(k)
	var err error
	if r.stuck, err = startStuck(ctx, r.xdsAddr, r.s.mode, k); err != nil {
		return err
	}
	if err := r.stuck.awaitState(ctx); err != nil {
		return err
	}
	r.cfg.StuckInitialSends, r.cfg.StuckInitialBytes = r.m.sendsToStuck()
	r.stuck.stopReading()
	r.cfg.StuckClients = k
	return nil
}

// memberSpecs reserves a listener port per Envoy or grpc-go client. K Envoys on one
// machine need K listener ports, and the listener is part of the state: each Envoy gets
// a node ID and a state of its own, added to opts.Nodes (one Envoy keeps the control
// plane's one node, as the bench always ran it). grpc-go clients take the same path,
// the front door on the listener port.
func (r *configRun) memberSpecs(opts *controlplane.Options) ([]memberSpec, error) {
	o := r.e.o
	if o.Client != ClientEnvoy && o.Client != ClientGRPC {
		return nil, nil
	}
	var proxies []memberSpec
	for i := 0; i < o.Envoys; i++ {
		port, err := loopback.FreePort()
		if err != nil {
			return nil, fmt.Errorf("listener port for %s %d: %w", o.Client, i, err)
		}
		r.picked = append(r.picked, port)
		ps := memberSpec{listenerPort: port}
		switch {
		case o.Client == ClientGRPC:
			ps.node = GRPCNodeID(i)
		case o.Envoys > 1:
			ps.node = FleetNodeID(i)
		}
		if ps.node != "" {
			opts.Nodes = append(opts.Nodes, ps.node)
		}
		proxies = append(proxies, ps)
	}
	return proxies, nil
}

// startTapFor starts the ADS tap in front of upstream, with its log beside the
// configuration's, and returns the address the clients connect to.
func (r *configRun) startTapFor(upstream string) (string, error) {
	tapLog := filepath.Join(r.e.o.Out, "xds-"+r.stem()+".tap.log")
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
	if len(r.cl.members) == 0 {
		r.targets = []*target{{pub: r.cp.Publisher(), listenerPort: resources.DefaultListener}}
		return r.m.waitSubscribed(ctx, r.e.o.Clients)
	}
	var nodes []string
	for _, p := range r.cl.members {
		r.targets = append(r.targets, &target{node: p.node, pub: r.cp.PublisherFor(p.node), member: p, listenerPort: p.listenerPort})
		r.cfg.Proxies = append(r.cfg.Proxies, p.info())
		nodes = append(nodes, p.nodeID())
	}
	r.cfg.EnvoyLog = r.cfg.Proxies[0].EnvoyLog
	r.cfg.PollIntervalMS = ms(pollEvery(len(r.cl.members)))
	r.cfg.PollIntervalAckedMS = ms(pollInterval)
	// Envoy asks for CDS at once; grpc-go asks for its listener by name and for
	// RDS, CDS and EDS only as each answer names them (the xDS resolver's
	// dependency manager: internal/xds/xdsdepmgr/xds_dependency_manager.go).
	first := "CDS"
	if r.e.o.Client == ClientGRPC {
		first = "LDS"
	}
	return r.m.waitNodesSubscribed(ctx, nodes, first)
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second+stopGrace(r.s.mode, r.n))
	defer cancel()
	var errs []error
	if r.cl != nil {
		if err := r.cl.stop(ctx); err != nil {
			errs = append(errs, err)
		}
		r.cfg.EnvoyExits = r.cl.exits()
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
		r.cfg.StuckSends, r.cfg.StuckBytes = r.m.sendsToStuck()
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
		st.Proxyless = r.e.o.Client == ClientGRPC
		set, err := resources.Rebuild(tg.pub.Current(), st)
		if err != nil {
			return nil, fmt.Errorf("build version %s%s: %w", state.Version, tg.forNode(), err)
		}
		sets[i] = set
	}
	s.BuildMS = ms(time.Since(t0))
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
	s.PublishMS = ms(time.Since(t0))
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
	return ports{listener: resources.DefaultListener, dead: r.e.deadPort, unlistedEmpty: r.e.o.Unprobed == UnprobedNoEndpoints,
		backends: [2]int{r.e.backends[0].port, r.e.backends[1].port}}
}

// measure publishes step i of the workload (0: the initial state) and waits until every
// client ACKed what it is owed and let go of what went away and, with Envoy, a request
// through every Envoy's own listener shows the change (the step's proof).
func (r *configRun) measure(ctx context.Context, step string, i int) (Sample, error) {
	ws := workloadStep(r.w, r.n, i, r.ports())
	state, pf := ws.state, ws.proof
	s := Sample{Step: step, Version: state.Version, Clusters: state.Clusters, Path: pf.path, Expect: r.describeProof(pf), ServerName: pf.server}
	if pf.backend != noBackend {
		b := r.e.backends[pf.backend]
		s.EndpointPort, s.Backend = b.port, b.name
	}
	before, err := r.readBefore(ctx)
	if err != nil {
		return s, err
	}
	r.rec.SetStep(step)
	if r.tap != nil {
		r.tap.setStep(step)
	}
	pr := r.newProbes(pf)
	t0 := time.Now()
	// Timed in two halves: the builders (validate and hash every resource), then the
	// publisher (snapshot or per-type cache updates, consistency check, publish event,
	// and the library's cache update, which for delta hashes every resource again).
	// Probe each Envoy only from its own publish on: nothing can change in it before,
	// and probes during a build (half a second at N = 10,000) would only add Envoy CPU
	// to the update's figure.
	sets, err := r.publish(ctx, state, t0, &s, func(k int) { pr.start(ctx, k) }, func(k int) { pr.publishedAt[k] = time.Now() })
	if err != nil {
		return s, err
	}
	wants := r.owed(sets)
	s.setOwed(wants[0])
	// A probe still running when a wait fails ends with ctx, which runConfig cancels;
	// its channel is buffered.
	if err := r.awaitStep(ctx, step, &s, wants, pr, t0); err != nil {
		return s, err
	}
	if err := r.readAfter(ctx, &s, before); err != nil {
		return s, err
	}
	if r.cl.sim != nil {
		// The simulated data plane: what a request on the path would get with what the
		// client runs.
		if err := r.checkSimulated(&s, pf, state.Version); err != nil {
			return s, err
		}
	}
	s.HeapInuse, s.HeapAlloc = heap()
	err = s.setSent(r.m.step(step), t0)
	return s, err
}

// readings are the counters read before a step: its cost is what they grew by.
type readings struct {
	self, tap time.Duration
	envoy     []cpuReading
	rx, tx    []int64
}

// readBefore reads this process's CPU, the tap's and each member's CPU and wire bytes,
// after collecting the previous step's garbage so it is not in this step's window.
func (r *configRun) readBefore(ctx context.Context) (readings, error) {
	proxies := r.cl.members
	heap()
	var (
		rd  = readings{envoy: make([]cpuReading, len(proxies)), rx: make([]int64, len(proxies)), tx: make([]int64, len(proxies))}
		err error
	)
	if rd.self, err = childproc.SelfCPU(); err != nil {
		return rd, err
	}
	if r.tap != nil && r.tap.pid() != 0 {
		if rd.tap, err = r.tap.cpu(); err != nil {
			return rd, err
		}
	}
	// Read the slow byte counters first: the CPU readings bracket only the update.
	for k, p := range proxies {
		if p.isGRPC() {
			continue // no byte counters: grpc-go keeps none it exposes
		}
		if rd.rx[k], rd.tx[k], err = p.wire(ctx); err != nil {
			return rd, fmt.Errorf("envoy %s: %w", p.nodeID(), err)
		}
	}
	for k, p := range proxies {
		if rd.envoy[k], err = readEnvoyCPU(p); err != nil {
			return rd, fmt.Errorf("envoy %s: %w", p.nodeID(), err)
		}
	}
	return rd, nil
}

// dpResult is one member's data-plane proof of a step.
type dpResult struct {
	answer Answer
	at     time.Time
	polls  int
	err    error
}

// probes are one step's data-plane probes, one per member, each started at its publish.
type probes struct {
	r    *configRun
	pf   proof
	slow time.Duration
	done []chan dpResult
	// acked[node] closes when the member's ACK is seen: its probes then go to full rate.
	acked       map[string]chan struct{}
	publishedAt []time.Time
}

func (r *configRun) newProbes(pf proof) *probes {
	pr := &probes{r: r, pf: pf, slow: pollEvery(len(r.cl.members)), done: make([]chan dpResult, len(r.cl.members)),
		acked: make(map[string]chan struct{}, len(r.cl.members)), publishedAt: make([]time.Time, len(r.targets))}
	for _, p := range r.cl.members {
		pr.acked[p.nodeID()] = make(chan struct{})
	}
	return pr
}

// start probes target k's member (none for simulated and fan-out clients) until it shows
// the step's proof.
func (pr *probes) start(ctx context.Context, k int) {
	p := pr.r.targets[k].member
	if p == nil {
		return
	}
	pr.done[k] = make(chan dpResult, 1)
	go func() {
		a, at, polls, err := p.awaitProof(ctx, pr.pf.path, pr.r.backendName(pr.pf), pr.pf.server, pr.slow, pr.acked[p.nodeID()])
		pr.done[k] <- dpResult{a, at, polls, err}
	}()
}

// owed is what each client owes after sets: the states differ only in the listener
// port, so every node owes the same types, each at its own publisher's version (the
// label with the snapshot cache, the type's own cache version with the LinearCache).
// Each target's published set becomes the one the next step is compared with.
func (r *configRun) owed(sets []*resources.Set) []want {
	wants := make([]want, len(r.targets))
	for k, tg := range r.targets {
		w := want{types: expectedTypes(r.s, sets[k], tg.prev), dropped: droppedNames(sets[k], tg.prev), versions: map[string]string{}}
		for t, v := range tg.pub.Versions() {
			w.versions[string(t)] = v
		}
		tg.prev = sets[k]
		wants[k] = w
	}
	return wants
}

// setOwed records what the step expects: the types sent and the names let go of.
func (s *Sample) setOwed(w want) {
	s.Expected = w.types
	for t, names := range w.dropped {
		for _, n := range names {
			s.AwaitedUnsubscribes = append(s.AwaitedUnsubscribes, t+"/"+n)
		}
	}
	slices.Sort(s.AwaitedUnsubscribes)
}

// awaitStep waits for every client's ACK and, with members, every member's data-plane
// proof, filling the sample's times from t0.
func (r *configRun) awaitStep(ctx context.Context, step string, s *Sample, wants []want, pr *probes, t0 time.Time) error {
	proxies := r.cl.members
	if len(proxies) == 0 {
		lastAck, err := r.m.waitConverged(ctx, step, r.e.o.Clients, wants[0])
		if err != nil {
			return err
		}
		s.AckMS = ms(lastAck.Sub(t0))
		return nil
	}
	byNode := make(map[string]want, len(proxies))
	for k, p := range proxies {
		byNode[p.nodeID()] = wants[k]
	}
	conv, err := r.m.waitNodes(ctx, step, byNode, func(node string) { close(pr.acked[node]) })
	if err != nil {
		return err
	}
	for k, p := range proxies {
		c := conv[p.nodeID()]
		ps := ProxySample{Node: p.nodeID(), Stream: c.stream, Versions: wants[k].versions, PublishedMS: ms(pr.publishedAt[k].Sub(t0)), AckMS: ms(c.at.Sub(t0))}
		s.Proxies = append(s.Proxies, ps)
		s.AckMS = max(s.AckMS, ps.AckMS)
	}
	return pr.collect(s, t0)
}

// collect is the data plane of the fleet: every member showed the change; the sample's
// figure is the last one's.
func (pr *probes) collect(s *Sample, t0 time.Time) error {
	for k := range pr.r.cl.members {
		res := <-pr.done[k]
		if res.err != nil {
			return res.err
		}
		ps := &s.Proxies[k]
		v := ms(res.at.Sub(t0))
		ps.DataPlaneMS, ps.Polls, ps.Answer = &v, res.polls, &res.answer
		s.Polls += res.polls
		if s.DataPlaneMS == nil || v > *s.DataPlaneMS {
			last, answer := v, res.answer
			s.DataPlaneMS, s.Answer = &last, &answer
		}
	}
	return nil
}

// readAfter fills the step's CPU (this process's, the tap's) and, with members, their
// CPU, RSS and wire bytes, as what grew since before.
func (r *configRun) readAfter(ctx context.Context, s *Sample, before readings) error {
	cpu1, err := childproc.SelfCPU()
	if err != nil {
		return err
	}
	s.CPUMS = ms(cpu1 - before.self)
	if r.tap != nil && r.tap.pid() != 0 {
		c, err := r.tap.cpu()
		if err != nil {
			return err
		}
		v := ms(c - before.tap)
		s.TapCPUMS = &v
	}
	if len(r.cl.members) == 0 {
		return nil
	}
	if err := r.readProxiesCPU(s, before); err != nil {
		return err
	}
	if err := r.readProxiesWire(ctx, s, before); err != nil {
		return err
	}
	if len(r.cl.members) > 1 {
		s.Distribution = distributionOf(s.Proxies, r.prevVersion, s.Version)
	}
	r.prevVersion = s.Version
	return nil
}

// readProxiesCPU fills each member's CPU and RSS, and their sum in the sample's own
// fields (one Envoy: the same figures as always).
func (r *configRun) readProxiesCPU(s *Sample, before readings) error {
	var cpuSum, ticksSum float64
	var rssSum int64
	for k, p := range r.cl.members {
		e1, err := readEnvoyCPU(p)
		if err != nil {
			return fmt.Errorf("envoy %s: %w", p.nodeID(), err)
		}
		cpu, ticks := ms(e1.cpu-before.envoy[k].cpu), ms(e1.ticks-before.envoy[k].ticks)
		s.EnvoyCPUSource = e1.source
		rss, err := p.rss()
		if err != nil {
			return fmt.Errorf("%s %s: %w", p.kindName(), p.nodeID(), err)
		}
		ps := &s.Proxies[k]
		ps.EnvoyCPUMS, ps.EnvoyRSS = &cpu, &rss
		cpuSum, ticksSum, rssSum = cpuSum+cpu, ticksSum+ticks, rssSum+rss
	}
	s.EnvoyCPUMS, s.EnvoyCPUTicksMS, s.EnvoyRSS = &cpuSum, &ticksSum, &rssSum
	return nil
}

// readProxiesWire fills each Envoy's wire bytes, and their sum with Envoy (grpc-go
// exposes no byte counters).
func (r *configRun) readProxiesWire(ctx context.Context, s *Sample, before readings) error {
	var rxSum, txSum int64
	for k, p := range r.cl.members {
		if p.isGRPC() {
			continue
		}
		rx1, tx1, err := p.wire(ctx)
		if err != nil {
			return fmt.Errorf("envoy %s: %w", p.nodeID(), err)
		}
		rx, tx := rx1-before.rx[k], tx1-before.tx[k]
		s.Proxies[k].EnvoyRxBytes, s.Proxies[k].EnvoyTxBytes = &rx, &tx
		rxSum, txSum = rxSum+rx, txSum+tx
	}
	if r.e.o.Client == ClientEnvoy {
		s.EnvoyRxBytes, s.EnvoyTxBytes = &rxSum, &txSum
	}
	return nil
}

// setSent fills what the step sent, from the recorder's events, and refuses a NACK of
// the valid state.
func (s *Sample) setSent(v stepView, t0 time.Time) error {
	s.ByType = v.ByType
	for _, tt := range v.ByType {
		s.Responses += tt.Responses
		s.Resources += tt.Resources
		s.Redundant += tt.Redundant
		s.Removed += tt.Removed
		s.Bytes += tt.Bytes
	}
	s.Acks, s.Nacks, s.Unmatched = v.Acks, v.Nacks, v.Unmatched
	if !v.LastSend.IsZero() {
		s.LastSendMS = ms(v.LastSend.Sub(t0))
	}
	if v.Nacks > 0 {
		return fmt.Errorf("the client NACKed %d response(s) of a valid state: %s", v.Nacks, v.NackError)
	}
	return nil
}

// backendName is the name of the backend a proof wants ("" for Envoy's own 404).
func (r *configRun) backendName(pf proof) string {
	if pf.backend == noBackend {
		return ""
	}
	return r.e.backends[pf.backend].name
}

// describeProof says what a step waits for in the data plane, for bench.json.
func (r *configRun) describeProof(pf proof) string {
	if pf.backend == noBackend {
		return "HTTP 404 from Envoy (no route)"
	}
	d := r.e.backends[pf.backend].name + " answers"
	if pf.server != "" {
		d += ", server: " + pf.server
	}
	return d
}

// checkSimulated asks the simulated client what a request on the proof's path would get
// and refuses a step it ACKed but does not run.
func (r *configRun) checkSimulated(s *Sample, pf proof, version string) error {
	got := r.cl.sim.Simulated().Route(pf.path)
	s.SimulatedEndpoint, s.SimulatedStatus, s.SimulatedServer = got.Endpoint, got.Status, got.Server
	if pf.backend == noBackend {
		if got.Status != 404 {
			return fmt.Errorf("simulated client ACKed version %s but answers %s with %d (%s), want 404 (no route)", version, pf.path, got.Status, got.Flags)
		}
		return nil
	}
	if want := loopback.Addr(r.e.backends[pf.backend].port); got.Endpoint != want {
		return fmt.Errorf("simulated client ACKed version %s but routes %s to %q, want %s", version, pf.path, got.Endpoint, want)
	}
	if pf.server != "" && got.Server != pf.server {
		return fmt.Errorf("simulated client ACKed version %s but its listener's server name is %q, want %q", version, got.Server, pf.server)
	}
	return nil
}

type cpuReading struct {
	cpu, ticks time.Duration
	source     string
}

// readEnvoyCPU reads the member process's CPU: Envoy's (envoyCPU), or a grpc-go
// client's process clock.
func readEnvoyCPU(p *member) (cpuReading, error) {
	if p.isGRPC() {
		c, err := childproc.CPUClock(p.grpc().Pid())
		return cpuReading{c, c, "clock_gettime"}, err
	}
	cpu, ticks, src, err := envoyCPU(p.envoy())
	return cpuReading{cpu, ticks, src}, err
}

// calibrate measures Envoy's CPU per request on path with no update in flight, on the
// first Envoy (every Envoy runs the same routes). Any HTTP answer counts: the last
// route's cluster points at a port nothing listens on (503).
func (r *configRun) calibrate(ctx context.Context, path string, requests int) (float64, error) {
	p := r.cl.members[0]
	e0, err := readEnvoyCPU(p)
	if err != nil {
		return 0, err
	}
	for i := 0; i < requests; i++ {
		if _, err := p.ask(ctx, path); err != nil {
			return 0, err
		}
	}
	e1, err := readEnvoyCPU(p)
	if err != nil {
		return 0, err
	}
	return float64((e1.cpu - e0.cpu).Microseconds()) / float64(requests), nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// info is what bench.json says of the member: for a grpc-go client, its CSDS address in
// place of Envoy's admin and its output log in place of Envoy's.
func (p *member) info() ProxyInfo {
	if p.isGRPC() {
		return ProxyInfo{Node: p.nodeID(), ListenerPort: p.listenerPort, AdminAddr: p.grpc().CSDSAddr(), EnvoyLog: p.bootstrap}
	}
	return ProxyInfo{Node: p.nodeID(), ListenerPort: p.listenerPort, AdminAddr: p.envoy().AdminAddr(), Bootstrap: p.bootstrap, EnvoyLog: filepath.Base(p.envoy().LogPath())}
}
