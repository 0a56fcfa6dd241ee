package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

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
