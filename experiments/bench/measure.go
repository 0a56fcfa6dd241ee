package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/childproc"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/resources"
)

// measure publishes step i of the workload (0: the initial state) and waits until every
// client ACKed what it is owed and let go of what went away and, with Envoy, a request
// through every Envoy's own listener shows the change (the step's proof).
func (r *configRun) measure(ctx context.Context, step string, i int) (Sample, error) {
	ws := workloadStep(r.w, r.n, i, r.ports())
	state, pf := ws.state, ws.proof
	s := Sample{Step: step, Version: state.Version, Clusters: state.Clusters, Path: pf.path, Expect: r.describeProof(pf), ServerName: pf.server}
	if pf.backend != noBackend {
		b := r.e.Backends[pf.backend]
		s.EndpointPort, s.Backend = b.Port, b.Name
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
	if r.cl.Sim != nil {
		// The simulated data plane: what a request on the path would get with what the
		// client runs.
		if err := r.checkSimulated(&s, pf, state.Version); err != nil {
			return s, err
		}
	}
	s.HeapInuse, s.HeapAlloc = benchcore.Heap(step == initialStep)
	err = s.setSent(r.m.Step(step), t0)
	return s, err
}

// readings are the counters read before a step: its cost is what they grew by.
type readings struct {
	self, tap time.Duration
	envoy     []cpuReading
	rx, tx    []int64
}

// readBefore reads this process's CPU, the tap's and each member's CPU and wire bytes.
// It does not collect garbage first (benchcore.Heap says why): a change is charged for
// the collections it causes, when they come.
func (r *configRun) readBefore(ctx context.Context) (readings, error) {
	proxies := r.cl.Members
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
		if p.IsGRPC() {
			continue // no byte counters: grpc-go keeps none it exposes
		}
		if rd.rx[k], rd.tx[k], err = p.Wire(ctx); err != nil {
			return rd, fmt.Errorf("envoy %s: %w", p.NodeID(), err)
		}
	}
	for k, p := range proxies {
		if rd.envoy[k], err = readEnvoyCPU(p); err != nil {
			return rd, fmt.Errorf("envoy %s: %w", p.NodeID(), err)
		}
	}
	return rd, nil
}

// dpResult is one member's data-plane proof of a step.
type dpResult struct {
	answer benchcore.Answer
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
	pr := &probes{r: r, pf: pf, slow: benchcore.PollEvery(len(r.cl.Members)), done: make([]chan dpResult, len(r.cl.Members)),
		acked: make(map[string]chan struct{}, len(r.cl.Members)), publishedAt: make([]time.Time, len(r.targets))}
	for _, p := range r.cl.Members {
		pr.acked[p.NodeID()] = make(chan struct{})
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
		a, at, polls, err := p.AwaitProof(ctx, pr.pf.path, pr.r.backendName(pr.pf), pr.pf.server, pr.slow, pr.acked[p.NodeID()])
		pr.done[k] <- dpResult{a, at, polls, err}
	}()
}

// owed is what each client owes after sets: the states differ only in the listener
// port, so every node owes the same types, each at its own publisher's version (the
// label with the snapshot cache, the type's own cache version with the LinearCache).
// Each target's published set becomes the one the next step is compared with.
func (r *configRun) owed(sets []*resources.Set) []benchcore.Want {
	wants := make([]benchcore.Want, len(r.targets))
	for k, tg := range r.targets {
		w := benchcore.Want{Types: expectedTypes(r.s, sets[k], tg.prev), Dropped: droppedNames(sets[k], tg.prev), Versions: map[string]string{}}
		for t, v := range tg.pub.Versions() {
			w.Versions[string(t)] = v
		}
		tg.prev = sets[k]
		wants[k] = w
	}
	return wants
}

// setOwed records what the step expects: the types sent and the names let go of.
func (s *Sample) setOwed(w benchcore.Want) {
	s.Expected = w.Types
	for t, names := range w.Dropped {
		for _, n := range names {
			s.AwaitedUnsubscribes = append(s.AwaitedUnsubscribes, t+"/"+n)
		}
	}
	slices.Sort(s.AwaitedUnsubscribes)
}

// awaitStep waits for every client's ACK and, with members, every member's data-plane
// proof, filling the sample's times from t0.
func (r *configRun) awaitStep(ctx context.Context, step string, s *Sample, wants []benchcore.Want, pr *probes, t0 time.Time) error {
	proxies := r.cl.Members
	if len(proxies) == 0 {
		lastAck, err := r.m.WaitConverged(ctx, step, r.e.Options.Clients, wants[0])
		if err != nil {
			return err
		}
		s.AckMS = benchcore.Millis(lastAck.Sub(t0))
		return nil
	}
	byNode := make(map[string]benchcore.Want, len(proxies))
	for k, p := range proxies {
		byNode[p.NodeID()] = wants[k]
	}
	conv, err := r.m.WaitNodes(ctx, step, byNode, func(node string) { close(pr.acked[node]) })
	if err != nil {
		return err
	}
	for k, p := range proxies {
		c := conv[p.NodeID()]
		ps := ProxySample{Node: p.NodeID(), Stream: c.Stream, Versions: wants[k].Versions, PublishedMS: benchcore.Millis(pr.publishedAt[k].Sub(t0)), AckMS: benchcore.Millis(c.At.Sub(t0))}
		s.Proxies = append(s.Proxies, ps)
		s.AckMS = max(s.AckMS, ps.AckMS)
	}
	return pr.collect(s, t0)
}

// collect is the data plane of the fleet: every member showed the change; the sample's
// figure is the last one's.
func (pr *probes) collect(s *Sample, t0 time.Time) error {
	for k := range pr.r.cl.Members {
		res := <-pr.done[k]
		if res.err != nil {
			return res.err
		}
		ps := &s.Proxies[k]
		v := benchcore.Millis(res.at.Sub(t0))
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
	s.CPUMS = benchcore.Millis(cpu1 - before.self)
	if r.tap != nil && r.tap.pid() != 0 {
		c, err := r.tap.cpu()
		if err != nil {
			return err
		}
		v := benchcore.Millis(c - before.tap)
		s.TapCPUMS = &v
	}
	if len(r.cl.Members) == 0 {
		return nil
	}
	if err := r.readProxiesCPU(s, before); err != nil {
		return err
	}
	if err := r.readProxiesWire(ctx, s, before); err != nil {
		return err
	}
	if len(r.cl.Members) > 1 {
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
	for k, p := range r.cl.Members {
		e1, err := readEnvoyCPU(p)
		if err != nil {
			return fmt.Errorf("envoy %s: %w", p.NodeID(), err)
		}
		cpu, ticks := benchcore.Millis(e1.cpu-before.envoy[k].cpu), benchcore.Millis(e1.ticks-before.envoy[k].ticks)
		s.EnvoyCPUSource = e1.source
		rss, err := p.Rss()
		if err != nil {
			return fmt.Errorf("%s %s: %w", p.KindName(), p.NodeID(), err)
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
	for k, p := range r.cl.Members {
		if p.IsGRPC() {
			continue
		}
		rx1, tx1, err := p.Wire(ctx)
		if err != nil {
			return fmt.Errorf("envoy %s: %w", p.NodeID(), err)
		}
		rx, tx := rx1-before.rx[k], tx1-before.tx[k]
		s.Proxies[k].EnvoyRxBytes, s.Proxies[k].EnvoyTxBytes = &rx, &tx
		rxSum, txSum = rxSum+rx, txSum+tx
	}
	if r.e.Options.Client == benchcore.ClientEnvoy {
		s.EnvoyRxBytes, s.EnvoyTxBytes = &rxSum, &txSum
	}
	return nil
}

// setSent fills what the step sent, from the recorder's events, and refuses a NACK of
// the valid state.
func (s *Sample) setSent(v benchcore.StepView, t0 time.Time) error {
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
		s.LastSendMS = benchcore.Millis(v.LastSend.Sub(t0))
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
	return r.e.Backends[pf.backend].Name
}

// describeProof says what a step waits for in the data plane, for bench.json.
func (r *configRun) describeProof(pf proof) string {
	if pf.backend == noBackend {
		return "HTTP 404 from Envoy (no route)"
	}
	d := r.e.Backends[pf.backend].Name + " answers"
	if pf.server != "" {
		d += ", server: " + pf.server
	}
	return d
}

// checkSimulated asks the simulated client what a request on the proof's path would get
// and refuses a step it ACKed but does not run.
func (r *configRun) checkSimulated(s *Sample, pf proof, version string) error {
	got := r.cl.Sim.Simulated().Route(pf.path)
	s.SimulatedEndpoint, s.SimulatedStatus, s.SimulatedServer = got.Endpoint, got.Status, got.Server
	if pf.backend == noBackend {
		if got.Status != 404 {
			return fmt.Errorf("simulated client ACKed version %s but answers %s with %d (%s), want 404 (no route)", version, pf.path, got.Status, got.Flags)
		}
		return nil
	}
	if want := loopback.Addr(r.e.Backends[pf.backend].Port); got.Endpoint != want {
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

// readEnvoyCPU reads the member process's CPU: Envoy's (benchcore.EnvoyCPU), or a grpc-go
// client's process clock.
func readEnvoyCPU(p *benchcore.Member) (cpuReading, error) {
	if p.IsGRPC() {
		c, err := childproc.CPUClock(p.Grpc().Pid())
		return cpuReading{c, c, "clock_gettime"}, err
	}
	cpu, ticks, src, err := benchcore.EnvoyCPU(p.Envoy())
	return cpuReading{cpu, ticks, src}, err
}

// calibrate measures Envoy's CPU per request on path with no update in flight, on the
// first Envoy (every Envoy runs the same routes). Any HTTP answer counts: the last
// route's cluster points at a port nothing listens on (503).
func (r *configRun) calibrate(ctx context.Context, path string, requests int) (float64, error) {
	p := r.cl.Members[0]
	e0, err := readEnvoyCPU(p)
	if err != nil {
		return 0, err
	}
	for i := 0; i < requests; i++ {
		if _, err := p.Ask(ctx, path); err != nil {
			return 0, err
		}
	}
	e1, err := readEnvoyCPU(p)
	if err != nil {
		return 0, err
	}
	return float64((e1.cpu - e0.cpu).Microseconds()) / float64(requests), nil
}

// info is what bench.json says of the member: for a grpc-go client, its CSDS address in
// place of Envoy's admin and its output log in place of Envoy's.
func proxyInfo(p *benchcore.Member) ProxyInfo {
	if p.IsGRPC() {
		return ProxyInfo{Node: p.NodeID(), ListenerPort: p.ListenerPort, AdminAddr: p.Grpc().CSDSAddr(), EnvoyLog: p.Bootstrap}
	}
	return ProxyInfo{Node: p.NodeID(), ListenerPort: p.ListenerPort, AdminAddr: p.Envoy().AdminAddr(), Bootstrap: p.Bootstrap, EnvoyLog: filepath.Base(p.Envoy().LogPath())}
}
