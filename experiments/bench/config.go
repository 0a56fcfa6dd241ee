package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// calibrationRequests is how many requests measure Envoy's CPU cost per data-plane probe,
// so a reader can tell how much of an update's Envoy CPU the probes themselves took.
const calibrationRequests = 50

// configRun is one configuration in progress.
type configRun struct {
	e   *env
	s   series
	n   int
	cfg *Config
	cp  *controlplane.ControlPlane
	rec *xdslog.Recorder
	// logFile is the configuration's xds.log: unbuffered, one write per line, as the
	// recorder expects.
	logFile *os.File
	m       *meter
	cl      *clients
	prev    *resources.Set
	// changed is the index of the cluster whose endpoint moves.
	changed      int
	listenerPort int
}

// runConfig measures one (N, series) configuration; failures are kept in Config.Error so
// the rest of the sweep still runs and the partial figures are still reported.
func (e *env) runConfig(ctx context.Context, s series, n int) *Config {
	started := time.Now()
	cfg := &Config{
		Series: s.name, Mode: s.mode, Versions: string(s.versions), N: n, Clients: e.o.Clients,
		// Cluster 0, because its route is the first of the virtual host: Envoy matches
		// routes in order, so a probe of /quote/<i> costs Envoy O(i) CPU (the last route's
		// cost is in envoy_cpu_per_request_last_route_us), and hundreds of probes during
		// one update would otherwise swamp the update's own Envoy CPU. Which cluster
		// changes does not matter to either protocol.
		ChangedCluster: 0,
	}
	cfg.Path = resources.ScaledPath(cfg.ChangedCluster)
	cfg.Client = e.o.Client
	if e.o.Clients > 1 {
		cfg.Client = clientAckOnly
	}
	r := &configRun{e: e, s: s, n: n, cfg: cfg, changed: cfg.ChangedCluster}
	ctx, cancel := context.WithTimeout(ctx, e.o.Timeout)
	defer cancel()
	err := r.run(ctx)
	if cerr := r.close(); err == nil {
		err = cerr
	}
	if err != nil {
		if r.cl != nil {
			if cerr := r.cl.err(); cerr != nil {
				err = fmt.Errorf("%w (client: %v)", err, cerr)
			}
		}
		cfg.Error = err.Error()
	}
	cfg.Summary = summarize(cfg.Updates)
	cfg.DurationS = time.Since(started).Seconds()
	return cfg
}

func (r *configRun) stem() string { return fmt.Sprintf("%s-N%d", r.s.name, r.n) }

func (r *configRun) run(ctx context.Context) error {
	e := r.e
	logPath := filepath.Join(e.o.Out, "xds-"+r.stem()+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("create xds.log: %w", err)
	}
	r.logFile = f
	r.cfg.Log = filepath.Base(logPath)
	r.m = newMeter()
	// The recorder writes the evidence log; the meter reads the same events as they are
	// written, so figures and log cannot disagree.
	r.rec = xdslog.NewRecorder(f, r.s.mode, xdslog.WithObserver(r.m.observe))
	// Default limits: 2,048 streams cover MaxClients, and every fan-out client has its own
	// connection, so the per-connection stream limit never applies.
	opts := controlplane.Options{Mode: r.s.mode, Addr: loopback.Addr(0), Recorder: r.rec}
	if r.s.mode == xdslog.ModeSotW {
		opts.Versions = r.s.versions
	}
	// The control plane lives for the configuration; Stop in close ends it.
	cp, err := controlplane.Start(context.WithoutCancel(ctx), opts)
	if err != nil {
		return err
	}
	r.cp = cp
	if e.o.Client == ClientEnvoy {
		if r.listenerPort, err = loopback.FreePort(); err != nil {
			return err
		}
	}
	spec := clientSpec{kind: r.cfg.Client, k: e.o.Clients, mode: r.s.mode, xdsAddr: cp.Addr(), bin: e.bin, dir: e.o.Out, name: r.stem(), listenerPort: r.listenerPort}
	r.cl, err = startClients(ctx, spec)
	if err != nil {
		return err
	}
	if r.cl.proc != nil {
		r.cfg.EnvoyLog = filepath.Base(r.cl.proc.LogPath())
	}
	if err := r.m.waitSubscribed(ctx, e.o.Clients); err != nil {
		return err
	}
	say := func(format string, args ...any) {
		e.say("[N=%d %s] "+format, append([]any{r.n, r.s.name}, args...)...)
	}

	// Initial state: the changed cluster starts on endpoint A.
	init, err := r.measure(ctx, "initial", "1", 0)
	r.cfg.Initial = init
	if err != nil {
		return fmt.Errorf("initial state: %w", err)
	}
	say("initial: %s", init.brief())
	if r.cl.proc != nil {
		if c, err := r.calibrate(ctx, r.cfg.Path, calibrationRequests); err == nil {
			r.cfg.EnvoyProbeCPUUS = &c
		}
		// The last route shows what the linear route match costs a request at this N.
		if c, err := r.calibrate(ctx, resources.ScaledPath(r.n-1), calibrationRequests/5); err == nil {
			r.cfg.EnvoyLastRouteCPUUS = &c
		}
	}
	for i := 1; i <= e.o.Repeat; i++ {
		// Alternate B, A, B, ...: every repeat is a real endpoint change.
		s, err := r.measure(ctx, "update-"+strconv.Itoa(i), strconv.Itoa(i+1), i%2)
		if err != nil {
			return fmt.Errorf("repeat %d: %w", i, err)
		}
		r.cfg.Updates = append(r.cfg.Updates, s)
		say("repeat %d/%d: %s", i, e.o.Repeat, s.brief())
	}
	r.cfg.StreamsOpened = r.m.streamsOpened()
	return nil
}

// close stops the clients and the control plane and closes the log.
func (r *configRun) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	if r.cl != nil {
		if err := r.cl.stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if r.cp != nil {
		r.cp.Stop()
	}
	if r.rec != nil {
		if err := r.rec.Err(); err != nil {
			errs = append(errs, err)
		}
	}
	if r.logFile != nil {
		if err := r.logFile.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", r.cfg.Log, err))
		}
	}
	return errors.Join(errs...)
}

// measure publishes one state and waits until every client ACKed it and, with Envoy, the
// changed cluster's path is answered by backend b (0: A, 1: B).
func (r *configRun) measure(ctx context.Context, step, version string, b int) (Sample, error) {
	backend := r.e.backends[b]
	state := resources.State{
		Version: version, ListenerPort: r.listenerPort, InventoryPort: r.e.deadPort,
		Clusters: r.n, EndpointPorts: map[int]int{r.changed: backend.port},
	}
	if state.ListenerPort == 0 {
		state.ListenerPort = resources.DefaultListener
	}
	s := Sample{Step: step, Version: version, EndpointPort: backend.port, Backend: backend.name}
	// Collect the previous step's garbage now rather than inside this step's window.
	heap()
	cpu0, err := selfCPU()
	if err != nil {
		return s, err
	}
	var (
		e0       cpuReading
		rx0, tx0 int64
	)
	if r.cl.proc != nil {
		// Read the slow byte counters first: the CPU readings bracket only the update.
		if rx0, tx0, err = r.cl.wire(ctx); err != nil {
			return s, err
		}
		if e0, err = readEnvoyCPU(r.cl); err != nil {
			return s, err
		}
	}
	r.rec.SetStep(step)

	type dpResult struct {
		at    time.Time
		polls int
		err   error
	}
	var dp chan dpResult
	t0 := time.Now()
	// ControlPlane.Publish in two timed halves: the builders (validate and hash every
	// resource), then the publisher (snapshot, consistency check, publish event, and the
	// library's cache update, which for delta hashes every resource again).
	set, err := resources.Build(state)
	if err != nil {
		return s, fmt.Errorf("build version %s: %w", version, err)
	}
	s.BuildMS = ms(time.Since(t0))
	if err := r.cp.Publisher().Publish(ctx, set); err != nil {
		return s, fmt.Errorf("publish version %s: %w", version, err)
	}
	s.PublishMS = ms(time.Since(t0))
	// Probe only once the state is published: nothing can change in Envoy before the
	// first send, and probes during a build (half a second at N = 10,000) would only add
	// Envoy CPU to the update's figure.
	if r.cl.proc != nil {
		dp = make(chan dpResult, 1)
		go func() {
			at, polls, err := r.cl.awaitBackend(ctx, r.cfg.Path, backend.name)
			dp <- dpResult{at, polls, err}
		}()
	}
	types := expectedTypes(r.s, set, r.prev)
	r.prev = set
	s.Expected = types
	lastAck, err := r.m.waitConverged(ctx, step, r.e.o.Clients, version, types)
	if err != nil {
		return s, err
	}
	s.AckMS = ms(lastAck.Sub(t0))
	if dp != nil {
		res := <-dp
		if res.err != nil {
			return s, res.err
		}
		v := ms(res.at.Sub(t0))
		s.DataPlaneMS, s.Polls = &v, res.polls
	}
	cpu1, err := selfCPU()
	if err != nil {
		return s, err
	}
	s.CPUMS = ms(cpu1 - cpu0)
	if r.cl.proc != nil {
		e1, err := readEnvoyCPU(r.cl)
		if err != nil {
			return s, err
		}
		cpu, ticks := ms(e1.cpu-e0.cpu), ms(e1.ticks-e0.ticks)
		s.EnvoyCPUMS, s.EnvoyCPUTicksMS, s.EnvoyCPUSource = &cpu, &ticks, e1.source
		rss, err := r.cl.proc.RSS()
		if err != nil {
			return s, err
		}
		s.EnvoyRSS = &rss
		rx1, tx1, err := r.cl.wire(ctx)
		if err != nil {
			return s, err
		}
		rx, tx := rx1-rx0, tx1-tx0
		s.EnvoyRxBytes, s.EnvoyTxBytes = &rx, &tx
	}
	if r.cl.sim != nil {
		// The simulated data plane: where would /quote/<i> go with what the client runs.
		got := r.cl.sim.Route(r.cfg.Path)
		s.SimulatedEndpoint = got.Endpoint
		if want := loopback.Addr(backend.port); got.Endpoint != want {
			return s, fmt.Errorf("simulated client ACKed version %s but routes %s to %q, want %s", version, r.cfg.Path, got.Endpoint, want)
		}
	}
	s.HeapInuse, s.HeapAlloc = heap()
	v := r.m.step(step)
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
		return s, fmt.Errorf("the client NACKed %d response(s) of a valid state: %s", v.Nacks, v.NackError)
	}
	return s, nil
}

// expectedTypes are the types every client must ACK at the new version: all four at first
// and for SotW with uniform versions (the label moves on every type), else the types whose
// content changed (SotW per-type keeps the others' versions; delta sends nothing for them).
func expectedTypes(s series, set, prev *resources.Set) []string {
	ts := resources.Types
	if prev != nil && !(s.mode == xdslog.ModeSotW && s.versions == frontend.Uniform) {
		ts = set.ChangedTypes(prev)
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

type cpuReading struct {
	cpu, ticks time.Duration
	source     string
}

func readEnvoyCPU(c *clients) (cpuReading, error) {
	cpu, ticks, src, err := envoyCPU(c.proc)
	return cpuReading{cpu, ticks, src}, err
}

// calibrate measures Envoy's CPU per request on path with no update in flight. Any HTTP
// answer counts: the last route's cluster points at a port nothing listens on (503).
func (r *configRun) calibrate(ctx context.Context, path string, requests int) (float64, error) {
	e0, err := readEnvoyCPU(r.cl)
	if err != nil {
		return 0, err
	}
	for i := 0; i < requests; i++ {
		if _, err := r.cl.ask(ctx, path); err != nil && !isHTTPStatus(err) {
			return 0, err
		}
	}
	e1, err := readEnvoyCPU(r.cl)
	if err != nil {
		return 0, err
	}
	return float64((e1.cpu - e0.cpu).Microseconds()) / float64(requests), nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
