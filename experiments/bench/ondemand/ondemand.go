package ondemand

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/session"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// OnDemandConfig is one (shape, series, N) of the on-demand axis: the scaled state of N
// services served wildcard (shape none) or on demand, to one real Envoy, measured as a
// sequence (runOnDemand):
//
//  1. initial: publish the state; Envoy ready (/ready LIVE) and every type sent ACKed;
//  2. cold: a request for each of ColdHosts distinct services Envoy has not used
//     (Host svc-<i>, path /quote/<i>), one at a time; each must answer 200 from its
//     backend. With VHDS the on_demand filter holds it while Envoy fetches the
//     VirtualHost (and with on-demand CDS the cluster and its assignment);
//  3. after the first 10 of them: Envoy's RSS (10 used), then a service add (the
//     cluster-add workload): what the server pushes to this Envoy unasked, then a cold
//     request for the new service (what it fetches, how long it takes);
//  4. warm: the same hosts again (nothing to fetch);
//  5. --repeat one-service changes (the endpoint workload on service 0, which Envoy
//     has fetched): what is sent, publish to ACK, publish to the request that shows it.
type OnDemandConfig struct {
	Shape  string `json:"shape"`
	Series string `json:"series"`
	Cache  string `json:"cache"`
	N      int    `json:"n"`
	// Log is the configuration's xds.log; Bootstrap and EnvoyLog Envoy's files.
	Log       string `json:"log"`
	Bootstrap string `json:"bootstrap,omitempty"`
	EnvoyLog  string `json:"envoy_log,omitempty"`
	// Initial: publish -> Envoy /ready LIVE (ReadyMS) and -> the last ACK of what the
	// initial push sent (AckMS); Sent is the whole initial push.
	Initial ODStep `json:"initial"`
	// RSSInitial is Envoy's RSS once the initial push is applied (no service used);
	// RSSUsed with UsedAtRSS services used (the first cold requests); RSSAfter after
	// every cold and warm request.
	RSSInitial int64 `json:"envoy_rss_initial"`
	RSSUsed    int64 `json:"envoy_rss_used"`
	UsedAtRSS  int   `json:"used_at_rss"`
	RSSAfter   int64 `json:"envoy_rss_after"`
	// Cold and Warm are the request latencies (client send -> answer read, through
	// Envoy's listener, one request at a time on one kept-alive connection); ColdSent and
	// WarmSent what the control plane sent during them (the fetches).
	Cold     Latency `json:"cold"`
	ColdSent Sent    `json:"cold_sent"`
	Warm     Latency `json:"warm"`
	WarmSent Sent    `json:"warm_sent"`
	// Add is the service add; Changes the one-service changes.
	Add     ODAdd    `json:"add"`
	Changes []ODStep `json:"changes"`
	// ActiveClusters is Envoy's cluster_manager.active_clusters at the end (the xDS
	// cluster included).
	ActiveClusters int64   `json:"envoy_active_clusters"`
	Error          string  `json:"error,omitempty"`
	DurationS      float64 `json:"duration_s"`
}

// ODStep is one published change and what followed it.
type ODStep struct {
	Sent Sent `json:"sent"`
	// BuildMS: t0 -> the state built (resources.Rebuild: validated and hashed).
	BuildMS float64 `json:"build_ms"`
	// PublishMS: t0 (before the build) -> the publisher returned.
	PublishMS float64 `json:"publish_ms"`
	// AckMS: t0 -> the last ACK of what was sent (nil: nothing was sent).
	AckMS *float64 `json:"ack_ms,omitempty"`
	// ReadyMS (initial): t0 -> Envoy's /ready answered 200 (polled every 2 ms).
	ReadyMS *float64 `json:"ready_ms,omitempty"`
	// DataPlaneMS (changes): t0 -> the first request answered by the new backend.
	DataPlaneMS *float64          `json:"data_plane_ms,omitempty"`
	Answer      *benchcore.Answer `json:"answer,omitempty"`
}

// ODAdd is the service add: Pushed is what reached this Envoy without it asking (until
// no event came for QuietMS after everything sent was ACKed); Fetch the cold request
// for the new service afterwards.
type ODAdd struct {
	Service int     `json:"service"`
	Pushed  ODStep  `json:"pushed"`
	QuietMS float64 `json:"quiet_ms"`
	Fetch   Fetch   `json:"fetch"`
	// Held is how many services Envoy had used when the service was added.
	Held int `json:"held"`
}

// Fetch is one cold request: its latency, answer and what was sent meanwhile.
type Fetch struct {
	MS     float64          `json:"ms"`
	Answer benchcore.Answer `json:"answer"`
	Sent   Sent             `json:"sent"`
}

// Latency summarises request times.
type Latency struct {
	Requests int       `json:"requests"`
	P50MS    float64   `json:"p50_ms"`
	P99MS    float64   `json:"p99_ms"`
	MaxMS    float64   `json:"max_ms"`
	MS       []float64 `json:"ms,omitempty"`
}

func latencyOf(v []float64) Latency {
	p, ok := benchcore.PercentilesOf(v)
	if !ok {
		return Latency{}
	}
	return Latency{Requests: len(v), P50MS: p.P50, P99MS: p.P99, MaxMS: p.Max, MS: v}
}

// settleQuiet: a step is over when everything sent is ACKed and no event came for this
// long. An unasked push to an on-demand Envoy is not awaited beyond it: nothing is owed.
const settleQuiet = 300 * time.Millisecond

// coldRequestTimeout bounds one request of the on-demand sequence: past the on_demand
// filter's cluster discovery timeout (resources.DefaultODCDSTimeout), so a missing
// cluster shows as Envoy's 503, not as a client timeout.
const coldRequestTimeout = 3 * resources.DefaultODCDSTimeout

// odRun is one on-demand configuration in progress.
type odRun struct {
	e       *benchcore.Env
	s       benchcore.Series
	od      resources.OnDemand
	n       int
	cfg     *OnDemandConfig
	trace   *odTrace
	rec     *xdslog.Recorder
	logFile *os.File
	ses     *session.Session
	cp      *controlplane.ControlPlane
	p       *benchcore.Member
	port    int
	state   resources.State
	version int
	// hosts are the services requested cold and warm, in order.
	hosts []int
}

func (r *odRun) say(format string, args ...any) {
	r.e.Say("[on-demand %s N=%d %s] "+format, append([]any{r.cfg.Shape, r.n, r.s.Name}, args...)...)
}

// runOnDemand measures one (shape, series, N); failures are kept in Error.
func runOnDemand(ctx context.Context, e *benchcore.Env, s benchcore.Series, od resources.OnDemand, n int) *OnDemandConfig {
	started := time.Now()
	cfg := &OnDemandConfig{Shape: benchcore.ShapeName(od), Series: s.Name, Cache: string(s.Cache), N: n}
	r := &odRun{e: e, s: s, od: od, n: n, cfg: cfg, hosts: coldHosts(n, e.Options.ColdHosts)}
	err := e.RunBounded(ctx, r.run, r.close)
	if err != nil {
		cfg.Error = err.Error()
	}
	cfg.DurationS = time.Since(started).Seconds()
	return cfg
}

// coldHosts spreads k services over 0..n-1 (all of them when n <= k), service 0 first.
func coldHosts(n, k int) []int {
	k = min(n, k)
	out := make([]int, k)
	for j := range out {
		out[j] = j * n / k
	}
	return out
}

func (r *odRun) stem() string {
	return fmt.Sprintf("ondemand-%s-%s-N%d", r.cfg.Shape, r.s.File(), r.n)
}

func (r *odRun) run(ctx context.Context) error {
	if err := r.start(ctx); err != nil {
		return err
	}
	if err := r.initial(ctx); err != nil {
		return fmt.Errorf("initial state: %w", err)
	}
	used := min(benchcore.UsedForRSS, len(r.hosts))
	stopProfile := func() {}
	if r.e.Options.CPUProfile {
		// The cold phase (the cold requests and the service add): where a held request's
		// time goes on the control plane's side.
		stop, err := benchcore.StartCPUProfile(filepath.Join(r.e.Options.Out, "cpu-"+r.stem()+".pprof"))
		if err != nil {
			return err
		}
		stopProfile = sync.OnceFunc(stop)
		defer stopProfile()
	}
	cold, err := r.requests(ctx, "cold", r.hosts[:used])
	if err != nil {
		return err
	}
	if r.cfg.RSSUsed, err = r.p.Envoy().RSS(); err != nil {
		return err
	}
	r.cfg.UsedAtRSS = used
	if err := r.add(ctx, used); err != nil {
		return fmt.Errorf("service add: %w", err)
	}
	rest, err := r.requests(ctx, "cold", r.hosts[used:])
	if err != nil {
		return err
	}
	stopProfile()
	r.cfg.Cold = latencyOf(append(cold.ms, rest.ms...))
	r.cfg.ColdSent = sumSent(cold.sent, rest.sent)
	warm, err := r.requests(ctx, "warm", r.hosts)
	if err != nil {
		return err
	}
	r.cfg.Warm, r.cfg.WarmSent = latencyOf(warm.ms), warm.sent
	if r.cfg.RSSAfter, err = r.p.Envoy().RSS(); err != nil {
		return err
	}
	r.say("cold p50 %.2f ms p99 %.2f ms (%d B fetched); warm p50 %.2f ms; RSS %d MB initial, %d MB with %d used",
		r.cfg.Cold.P50MS, r.cfg.Cold.P99MS, r.cfg.ColdSent.Bytes, r.cfg.Warm.P50MS, r.cfg.RSSInitial>>20, r.cfg.RSSUsed>>20, used)
	for i := 1; i <= r.e.Options.Repeat; i++ {
		st, err := r.change(ctx, i)
		if err != nil {
			return fmt.Errorf("change %d: %w", i, err)
		}
		r.cfg.Changes = append(r.cfg.Changes, st)
	}
	if r.cfg.ActiveClusters, err = r.p.Envoy().StatInt(ctx, "cluster_manager.active_clusters"); err != nil {
		return err
	}
	return nil
}

// start opens the log, the control plane (delta, with the shape's OnDemand) and Envoy
// (without cds_config when clusters are on demand), and waits for Envoy's first request.
func (r *odRun) start(ctx context.Context) error {
	e := r.e
	logPath := filepath.Join(e.Options.Out, "xds-"+r.stem()+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("create xds.log: %w", err)
	}
	r.logFile, r.cfg.Log = f, filepath.Base(logPath)
	r.trace = newODTrace()
	ses, err := session.New(session.Options{ControlPlane: controlplane.Options{Mode: r.s.Mode, Addr: loopback.Addr(0), Cache: r.s.Cache, OnDemand: r.od},
		Log: f, Record: []xdslog.Option{xdslog.WithObserver(r.trace.observe)}})
	if err != nil {
		return err
	}
	r.ses, r.cp, r.rec = ses, ses.ControlPlane(), ses.Recorder()
	if err := ses.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	cp := r.cp
	if r.port, err = loopback.FreePort(); err != nil {
		return fmt.Errorf("listener port: %w", err)
	}
	spec := benchcore.ClientSpec{Kind: benchcore.ClientEnvoy, Mode: r.s.Mode, XdsAddr: cp.Addr(), Bin: e.Bin, Dir: e.Options.Out, Name: r.stem(), StopGrace: benchcore.StopGrace(r.s.Mode, r.n), OnDemandClusters: r.od.Clusters, EnvoyStats: e.Options.EnvoyStats}
	if r.p, err = benchcore.StartEnvoy(ctx, spec, benchcore.MemberSpec{ListenerPort: r.port}); err != nil {
		return err
	}
	// A cold request is held while Envoy fetches; at N = 100,000 under the SnapshotCache
	// one took 1.3 s, and the on_demand filter's own cluster timeout is 5 s.
	r.p.Http.Timeout = coldRequestTimeout
	r.cfg.Bootstrap, r.cfg.EnvoyLog = r.p.Bootstrap, filepath.Base(r.p.Envoy().LogPath())
	_, err = r.trace.wait(ctx, 0, 0, "Envoy's first request", func(evs []odEvent) bool {
		return slices.ContainsFunc(evs, func(e odEvent) bool { return e.event == xdslog.EventRequest })
	})
	return err
}

func (r *odRun) close() error {
	t := benchcore.Teardown{Member: r.p, Session: r.ses, Log: r.logFile, LogName: r.cfg.Log, Port: r.port}
	return t.Close(r.s.Mode, r.n)
}

// backendOf is the backend index service i answers from: the j-th cold host from
// backend j%2, the added service from B (1); everything else points at the dead port.
func (r *odRun) backendOf(i int) int {
	if j := slices.Index(r.hosts, i); j >= 0 {
		return j % 2
	}
	return 1
}

// initialState is the scaled state of N services in the run's shape, each cold host on
// its backend.
func (r *odRun) initialState() resources.State {
	st := resources.State{ListenerPort: r.port, InventoryPort: r.e.DeadPort, Clusters: r.n, EndpointPorts: map[int]int{}, OnDemand: r.od}
	for _, i := range r.hosts {
		st.EndpointPorts[i] = r.e.Backends[r.backendOf(i)].Port
	}
	return st
}

// publish builds r.state incrementally and publishes it; t0 is before the build.
func (r *odRun) publish(ctx context.Context, step string) (int, time.Time, ODStep, error) {
	r.rec.SetStep(step)
	mark := r.trace.mark()
	r.version++
	r.state.Version = fmt.Sprint(r.version)
	t0 := time.Now()
	pub := r.cp.Publisher()
	set, err := resources.Rebuild(pub.Current(), r.state)
	if err != nil {
		return mark, t0, ODStep{}, err
	}
	built := benchcore.Millis(time.Since(t0))
	if err := pub.Publish(ctx, set); err != nil {
		return mark, t0, ODStep{}, err
	}
	return mark, t0, ODStep{BuildMS: built, PublishMS: benchcore.Millis(time.Since(t0))}, nil
}

func (r *odRun) initial(ctx context.Context) error {
	r.state = r.initialState()
	mark, t0, st, err := r.publish(ctx, "initial")
	if err != nil {
		return err
	}
	if err := r.p.AwaitReady(ctx); err != nil {
		return err
	}
	ready := benchcore.Millis(time.Since(t0))
	st.ReadyMS = &ready
	if err := r.settle(ctx, mark, t0, &st); err != nil {
		return err
	}
	r.cfg.Initial = st
	if r.cfg.RSSInitial, err = r.p.Envoy().RSS(); err != nil {
		return err
	}
	r.say("initial: %d resource(s), %d B; build %.0f ms, publish %.0f ms, ready %.0f ms; RSS %d MB", st.Sent.Resources, st.Sent.Bytes, st.BuildMS, st.PublishMS, ready, r.cfg.RSSInitial>>20)
	return nil
}

// settle waits until everything sent since mark is ACKed and no event came for
// settleQuiet, and fills st's Sent and AckMS (a NACK fails the step).
func (r *odRun) settle(ctx context.Context, mark int, t0 time.Time, st *ODStep) error {
	for {
		evs := r.trace.since(mark)
		if n := nacked(evs); n != "" {
			//lint:ignore ST1005 Envoy is a proper noun
			return fmt.Errorf("Envoy NACKed a valid state: %s", n)
		}
		sent := slices.ContainsFunc(evs, func(e odEvent) bool { return e.event == xdslog.EventSend })
		if _, ok := converged(evs); sent && !ok {
			if _, err := r.trace.wait(ctx, mark, 0, "Envoy's ACK", func(evs []odEvent) bool { _, ok := converged(evs); return ok || nacked(evs) != "" }); err != nil {
				return err
			}
			continue
		}
		seen := len(evs)
		more, err := r.trace.wait(ctx, mark, settleQuiet, "a quiet stream", func(evs []odEvent) bool { return len(evs) > seen })
		if err != nil {
			return err
		}
		if more {
			continue
		}
		st.Sent = sentIn(evs)
		if last, ok := converged(evs); ok {
			v := benchcore.Millis(last.Sub(t0))
			st.AckMS = &v
		}
		return nil
	}
}

// requestRun is what a series of requests measured.
type requestRun struct {
	ms   []float64
	sent Sent
}

// requests asks for each service once, in order, and checks each answer; then waits
// for the stream to settle (the fetches' ACKs), so the next step starts quiet.
func (r *odRun) requests(ctx context.Context, step string, hosts []int) (requestRun, error) {
	var out requestRun
	if len(hosts) == 0 {
		return out, nil
	}
	r.rec.SetStep(step)
	mark := r.trace.mark()
	for _, i := range hosts {
		f, err := r.fetch(ctx, i)
		if err != nil {
			return out, fmt.Errorf("%s request %d: %w", step, len(out.ms)+1, err)
		}
		out.ms = append(out.ms, f.MS)
	}
	var st ODStep
	if err := r.settle(ctx, mark, time.Now(), &st); err != nil {
		return out, err
	}
	out.sent = st.Sent
	return out, nil
}

// fetch sends one request for service i and checks it was answered 200 by its backend.
func (r *odRun) fetch(ctx context.Context, i int) (Fetch, error) {
	mark := r.trace.mark()
	host, path := resources.ServiceHost(i), resources.ScaledPath(i)
	t := time.Now()
	a, err := r.p.AskHost(ctx, host, path)
	d := benchcore.Millis(time.Since(t))
	if err != nil {
		//lint:ignore ST1005 "Host" is the HTTP header the request names the service by
		return Fetch{}, fmt.Errorf("Host %s %s: %w", host, path, err)
	}
	want := r.e.Backends[r.backendOf(i)].Name
	if a.Status != http.StatusOK || a.Backend != want {
		//lint:ignore ST1005 "Host" is the HTTP header the request names the service by
		return Fetch{}, fmt.Errorf("Host %s %s: answered %s, want HTTP 200 from %s", host, path, a, want)
	}
	return Fetch{MS: d, Answer: a, Sent: sentIn(r.trace.since(mark))}, nil
}

// add is the service add: service N appears (the cluster-add workload's change); what
// reaches Envoy unasked, then a cold request for it.
func (r *odRun) add(ctx context.Context, held int) error {
	i := r.n
	r.state.Clusters = r.n + 1
	r.state.EndpointPorts[i] = r.e.Backends[r.backendOf(i)].Port
	mark, t0, st, err := r.publish(ctx, "add")
	if err != nil {
		return err
	}
	if err := r.settle(ctx, mark, t0, &st); err != nil {
		return err
	}
	r.rec.SetStep("add-fetch")
	f, err := r.fetch(ctx, i)
	if err != nil {
		return err
	}
	r.cfg.Add = ODAdd{Service: i, Pushed: st, QuietMS: benchcore.Millis(settleQuiet), Fetch: f, Held: held}
	r.say("service add: pushed %d resource(s), %d B; fetch %.2f ms, %d resource(s), %d B", st.Sent.Resources, st.Sent.Bytes, f.MS, f.Sent.Resources, f.Sent.Bytes)
	return nil
}

// change k moves service 0's endpoint (B, A, B, ...) and waits for the answer to show it.
func (r *odRun) change(ctx context.Context, k int) (ODStep, error) {
	b := k % 2
	r.state.EndpointPorts[0] = r.e.Backends[b].Port
	mark, t0, st, err := r.publish(ctx, fmt.Sprintf("change-%d", k))
	if err != nil {
		return st, err
	}
	a, at, _, err := r.p.AwaitHost(ctx, resources.ServiceHost(0), resources.ScaledPath(0), r.e.Backends[b].Name)
	if err != nil {
		return st, err
	}
	v := benchcore.Millis(at.Sub(t0))
	st.DataPlaneMS, st.Answer = &v, &a
	if err := r.settle(ctx, mark, t0, &st); err != nil {
		return st, err
	}
	return st, nil
}

func sumSent(a, b Sent) Sent {
	out := a
	out.Responses += b.Responses
	out.Resources += b.Resources
	out.NotFound += b.NotFound
	out.Removed += b.Removed
	out.Bytes += b.Bytes
	for t, n := range b.ByType {
		if out.ByType == nil {
			out.ByType = map[string]int{}
		}
		out.ByType[t] += n
	}
	for t, k := range b.Subscribes {
		if out.Subscribes == nil {
			out.Subscribes = map[string]int{}
		}
		out.Subscribes[t] += k
	}
	for t, names := range b.Subscribed {
		if out.Subscribed == nil {
			out.Subscribed = map[string][]string{}
		}
		out.Subscribed[t] = append(out.Subscribed[t], names...)
	}
	return out
}
