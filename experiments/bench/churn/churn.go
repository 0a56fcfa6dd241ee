package churn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/inventory"
	"github.com/xds-workbench/lab/experiments/load"
	"github.com/xds-workbench/lab/experiments/progress"
	"github.com/xds-workbench/lab/experiments/session"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/stats"
)

// ChurnConfig is one (churn mode, series, N) of the churn axis: the scaled state of N
// clusters served to one real Envoy, cluster 0 with two endpoints, one that stays and
// one that alternates between two backends with every update, under steady load on
// cluster 0's path (runChurn):
//
//  1. initial: publish; Envoy /ready LIVE and the first alternating backend answering;
//  2. the load starts (ChurnRate requests per second over ChurnConnections HTTP/1.1
//     connections) and warms up for churnWarmup; Envoy's counters are read;
//  3. an update every ChurnEvery, each awaited in the data plane (the new backend answers
//     a probe) before the next, until ChurnRequests requests have been sent since the
//     first: with ChurnEDS the ClusterLoadAssignment alone changes, with ChurnCDS the
//     cluster too (its connect_timeout moves by a millisecond);
//  4. the load stops; the counters are read again and checked: cluster_modified grew by
//     the CDS updates (none with ChurnEDS), no cluster is warming.
type ChurnConfig struct {
	Churn  string `json:"churn"`
	Series string `json:"series"`
	Cache  string `json:"cache"`
	N      int    `json:"n"`
	// Log is the configuration's xds.log; Bootstrap and EnvoyLog Envoy's files.
	Log       string `json:"log"`
	Bootstrap string `json:"bootstrap,omitempty"`
	EnvoyLog  string `json:"envoy_log,omitempty"`
	// Rate is the load (requests per second), EveryMS the interval between updates and
	// ConnCostMS each backend's delay on a connection's first request.
	Rate       int     `json:"rate"`
	EveryMS    float64 `json:"every_ms"`
	ConnCostMS float64 `json:"conn_cost_ms"`
	// Updates were published; Applied were seen in the data plane (the new backend
	// answered a probe).
	Updates int `json:"updates"`
	Applied int `json:"updates_applied"`
	// The deltas of Envoy's counters over the churn (from after the warm-up to after
	// the load stopped): cluster_manager.cluster_modified, and cluster 0's
	// upstream_cx_destroy and upstream_cx_total; WarmingClusters is
	// cluster_manager.warming_clusters at the end.
	ClusterModified int64 `json:"cluster_modified"`
	CxDestroyed     int64 `json:"upstream_cx_destroy"`
	CxOpened        int64 `json:"upstream_cx_total"`
	WarmingClusters int64 `json:"warming_clusters"`
	// StayConns are the new connections the backend that stays in cluster 0 took over
	// the churn (inventory.Backend.Connections): Envoy's pool for it drained and rebuilt.
	StayConns int64 `json:"stay_new_connections"`
	// DestroyedPerUpdate and OpenedPerUpdate are CxDestroyed and CxOpened ÷ Updates.
	DestroyedPerUpdate float64 `json:"cx_destroyed_per_update"`
	OpenedPerUpdate    float64 `json:"cx_opened_per_update"`
	// Latency is over the requests sent during the churn.
	Latency ChurnLatency `json:"latency"`
	// LoadAvg is the machine's load average when the configuration started.
	LoadAvg   string  `json:"loadavg,omitempty"`
	Error     string  `json:"error,omitempty"`
	DurationS float64 `json:"duration_s"`
}

// ChurnLatency summarises the load's requests in a window: nearest-rank percentiles
// (stats.Percentile) of every request's latency, failures included, and how many took
// longer than the connection cost.
type ChurnLatency struct {
	Requests int     `json:"requests"`
	Failed   int     `json:"failed"`
	P50MS    float64 `json:"p50_ms"`
	P99MS    float64 `json:"p99_ms"`
	P999MS   float64 `json:"p999_ms"`
	MaxMS    float64 `json:"max_ms"`
	// Slower counts the requests that took longer than the connection cost; Share is
	// Slower ÷ Requests.
	Slower int     `json:"slower_than_cost"`
	Share  float64 `json:"share_slower_than_cost"`
}

const (
	// ChurnConnections are the load's connections to Envoy.
	ChurnConnections = 4
	// churnWarmup is the load before the first update: Envoy's upstream connections
	// are open when the counters are first read.
	churnWarmup = time.Second
	// churnProbeEvery is the interval between probes awaiting an update.
	churnProbeEvery = 5 * time.Millisecond
	// churnApplyTimeout bounds the wait for one update to show.
	churnApplyTimeout = 30 * time.Second
)

// Envoy's counters the churn reads.
var (
	statClusterModified = "cluster_manager.cluster_modified"
	statWarmingClusters = "cluster_manager.warming_clusters"
	statCxDestroy       = "cluster." + resources.ScaledClusterName(0) + ".upstream_cx_destroy"
	statCxTotal         = "cluster." + resources.ScaledClusterName(0) + ".upstream_cx_total"
)

// churnRun is one churn configuration in progress.
type churnRun struct {
	e       *benchcore.Env
	s       benchcore.Series
	churn   string
	n       int
	cfg     *ChurnConfig
	logFile *os.File
	ses     *session.Session
	cp      *controlplane.ControlPlane
	p       *benchcore.Member
	port    int
	// backends: 0 stays in cluster 0, 1 and 2 alternate.
	backends [3]*inventory.Backend
	// base is the scaled state's resources but cluster 0's cluster and assignment.
	base []resources.Resource
}

// Sweep runs every (N, churn mode, series) of the churn axis and returns the
// configurations, in run order, and the failed ones.
func Sweep(ctx context.Context, e *benchcore.Env, ser []benchcore.Series, start time.Time) (cfgs []*ChurnConfig, failed []string) {
	total, k := len(e.Options.Clusters)*len(e.Options.Churn)*len(ser), 0
	for _, n := range e.Options.Clusters {
		for _, s := range ser {
			for _, c := range e.Options.Churn {
				if ctx.Err() != nil {
					return cfgs, failed
				}
				k++
				e.Say("%s churn %s N=%d %s%s", progress.Mark(k, total), c, n, s.Name, progress.Left(time.Since(start), k-1, total))
				cfg := runChurn(ctx, e, s, c, n)
				cfgs = append(cfgs, cfg)
				if cfg.Error != "" {
					failed = append(failed, fmt.Sprintf("churn %s %s N=%d: %s", c, s.Name, n, cfg.Error))
					e.Say("[churn %s N=%d %s] FAILED: %s", c, n, s.Name, cfg.Error)
				}
			}
		}
	}
	return cfgs, failed
}

// runChurn measures one (churn mode, series, N); failures are kept in Error.
func runChurn(ctx context.Context, e *benchcore.Env, s benchcore.Series, churn string, n int) *ChurnConfig {
	started := time.Now()
	cfg := &ChurnConfig{Churn: churn, Series: s.Name, Cache: string(s.Cache), N: n, Rate: e.Options.ChurnRate,
		EveryMS: benchcore.Millis(e.Options.ChurnEvery), ConnCostMS: benchcore.Millis(e.Options.ConnCost), LoadAvg: benchcore.LoadAvg()}
	r := &churnRun{e: e, s: s, churn: churn, n: n, cfg: cfg}
	if err := e.RunBounded(ctx, r.run, r.close); err != nil {
		cfg.Error = err.Error()
	}
	cfg.DurationS = time.Since(started).Seconds()
	return cfg
}

func (r *churnRun) stem() string { return fmt.Sprintf("churn-%s-%s-N%d", r.churn, r.s.File(), r.n) }

func (r *churnRun) say(format string, args ...any) {
	r.e.Say("[churn %s N=%d %s] "+format, append([]any{r.churn, r.n, r.s.Name}, args...)...)
}

func (r *churnRun) run(ctx context.Context) error {
	if err := r.start(ctx); err != nil {
		return err
	}
	if err := r.publish(ctx, 0); err != nil {
		return fmt.Errorf("initial state: %w", err)
	}
	if err := r.p.AwaitReady(ctx); err != nil {
		return err
	}
	if err := r.awaitBackend(ctx, 0); err != nil {
		return fmt.Errorf("initial state: %w", err)
	}
	if err := r.churnUnderLoad(ctx); err != nil {
		return err
	}
	c := r.cfg
	r.say("%d requests: p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms; %.1f%% slower than the connection cost; %d/%d updates applied, %.2f upstream connections destroyed and %.2f opened per update, %d new to the backend that stays, cluster_modified +%d",
		c.Latency.Requests, c.Latency.P50MS, c.Latency.P99MS, c.Latency.P999MS, 100*c.Latency.Share, c.Applied, c.Updates, c.DestroyedPerUpdate, c.OpenedPerUpdate, c.StayConns, c.ClusterModified)
	return checkChurn(c)
}

// checkChurn refuses a configuration whose updates did not all take effect, so that a
// throttled or lost update cannot pass as a better figure.
func checkChurn(c *ChurnConfig) error {
	want := int64(0)
	if c.Churn == benchcore.ChurnCDS {
		want = int64(c.Updates)
	}
	var errs []error
	if c.Applied != c.Updates {
		errs = append(errs, fmt.Errorf("%d of %d updates seen in the data plane", c.Applied, c.Updates))
	}
	if c.ClusterModified != want {
		errs = append(errs, fmt.Errorf("%s grew by %d, want %d (%d %s updates)", statClusterModified, c.ClusterModified, want, c.Updates, c.Churn))
	}
	if c.WarmingClusters != 0 {
		errs = append(errs, fmt.Errorf("%s is %d at the end, want 0", statWarmingClusters, c.WarmingClusters))
	}
	if c.Updates == 0 {
		errs = append(errs, errors.New("no update was published"))
	}
	return errors.Join(errs...)
}

// start opens the log, the backends, the control plane and Envoy, and builds the base
// resources.
func (r *churnRun) start(ctx context.Context) error {
	e := r.e
	logPath := filepath.Join(e.Options.Out, "xds-"+r.stem()+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("create xds.log: %w", err)
	}
	r.logFile, r.cfg.Log = f, filepath.Base(logPath)
	for i, name := range []string{"churn-stay", "churn-a", "churn-b"} {
		if r.backends[i], err = inventory.StartWith(name, 0, "", inventory.Behaviour{ConnDelay: e.Options.ConnCost}); err != nil {
			return err
		}
	}
	opts := controlplane.Options{Mode: r.s.Mode, Addr: loopback.Addr(0), Cache: r.s.Cache}
	if r.s.Mode == protocol.SotW {
		opts.Versions = r.s.Versions
	}
	ses, err := session.New(session.Options{ControlPlane: opts, Log: f})
	if err != nil {
		return err
	}
	r.ses, r.cp = ses, ses.ControlPlane()
	if err := ses.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	if r.port, err = loopback.FreePort(); err != nil {
		return fmt.Errorf("listener port: %w", err)
	}
	if err := r.buildBase(); err != nil {
		return err
	}
	spec := benchcore.ClientSpec{Kind: benchcore.ClientEnvoy, Mode: r.s.Mode, XdsAddr: r.cp.Addr(), Bin: e.Bin, Dir: e.Options.Out, Name: r.stem(), StopGrace: benchcore.StopGrace(r.s.Mode, r.n), EnvoyStats: e.Options.EnvoyStats}
	if r.p, err = benchcore.StartEnvoy(ctx, spec, benchcore.MemberSpec{ListenerPort: r.port}); err != nil {
		return err
	}
	r.cfg.Bootstrap, r.cfg.EnvoyLog = r.p.Bootstrap, filepath.Base(r.p.Envoy().LogPath())
	return nil
}

// buildBase builds the scaled state (every cluster but 0 on the dead port) and keeps
// every resource but cluster 0's cluster and assignment, which each update builds.
func (r *churnRun) buildBase() error {
	set, err := resources.Build(resources.State{Version: "base", ListenerPort: r.port, InventoryPort: r.e.DeadPort, Clusters: r.n})
	if err != nil {
		return err
	}
	c0 := resources.ScaledClusterName(0)
	for _, t := range resources.Types {
		for _, res := range set.ByType[t].All() {
			if (t == resources.CDS || t == resources.EDS) && res.Name == c0 {
				continue
			}
			r.base = append(r.base, res)
		}
	}
	return nil
}

// publish publishes update k (0: the initial state): cluster 0's endpoints are the
// backend that stays and alternating backend k%2, and with ChurnCDS its connect_timeout
// is 1 s + k ms, so every update is a change of the cluster itself.
func (r *churnRun) publish(ctx context.Context, k int) error {
	c0 := resources.ScaledClusterName(0)
	spec := resources.ClusterSpec{Name: c0, ConnectTimeout: time.Second}
	if r.churn == benchcore.ChurnCDS {
		spec.ConnectTimeout += time.Duration(k) * time.Millisecond
	}
	cl, err := resources.BuildCluster(spec)
	if err != nil {
		return err
	}
	cla := resources.BuildEndpoints(c0, r.backends[0].Port(), r.backends[1+k%2].Port())
	rs := append(r.base[:len(r.base):len(r.base)],
		resources.Resource{Type: resources.CDS, Name: c0, Resource: cl},
		resources.Resource{Type: resources.EDS, Name: c0, Resource: cla})
	set, err := resources.NewSet(strconv.Itoa(k+1), rs, nil)
	if err != nil {
		return err
	}
	return r.cp.Publisher().Publish(ctx, set)
}

// awaitBackend probes cluster 0's path through Envoy every churnProbeEvery until
// alternating backend k%2 answers (the update reached the data plane).
func (r *churnRun) awaitBackend(ctx context.Context, k int) error {
	want := r.backends[1+k%2].Name()
	ctx, cancel := context.WithTimeout(ctx, churnApplyTimeout)
	defer cancel()
	last := "no answer yet"
	for {
		got, err := r.askBackend(ctx)
		if err == nil && got == want {
			return nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = "answered by " + got
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("update %d: waiting for %s to answer: %w (last: %s)", k, want, ctx.Err(), last)
		case <-r.p.Exited():
			//lint:ignore ST1005 Envoy is a proper noun
			return fmt.Errorf("Envoy exited while waiting for update %d: %v", k, r.p.ExitErr())
		case <-time.After(churnProbeEvery):
		}
	}
}

// askBackend sends one request for cluster 0's path through Envoy and returns the
// backend the answer names.
func (r *churnRun) askBackend(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+loopback.Addr(r.port)+resources.ScaledPath(0), nil)
	if err != nil {
		return "", err
	}
	resp, err := r.p.Http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<12))
	var q inventory.Quote
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &q) != nil {
		return "", fmt.Errorf("HTTP %d %q", resp.StatusCode, body)
	}
	return q.Backend, nil
}

// churnUnderLoad starts the load, warms it up, then publishes an update every
// ChurnEvery (each awaited in the data plane) until ChurnRequests requests were sent
// since the first, and fills the figures.
func (r *churnRun) churnUnderLoad(ctx context.Context) error {
	o := r.e.Options
	g, err := load.Start(ctx, load.Options{Rate: o.ChurnRate, Connections: min(ChurnConnections, o.ChurnRate), Protocol: load.HTTP1,
		Target: "http://" + loopback.Addr(r.port) + resources.ScaledPath(0), IDPrefix: "churn"})
	if err != nil {
		return err
	}
	defer g.Stop()
	if err := benchcore.Wait(ctx, churnWarmup); err != nil {
		return err
	}
	before, err := r.counters(ctx)
	if err != nil {
		return err
	}
	from := time.Now()
	least := time.Duration(float64(o.ChurnRequests) / float64(o.ChurnRate) * float64(time.Second))
	for k := 1; ; k++ {
		if err := r.publish(ctx, k); err != nil {
			return fmt.Errorf("update %d: %w", k, err)
		}
		r.cfg.Updates = k
		if err := r.awaitBackend(ctx, k); err != nil {
			return err
		}
		r.cfg.Applied = k
		if err := benchcore.Wait(ctx, time.Until(from.Add(time.Duration(k)*o.ChurnEvery))); err != nil {
			return err
		}
		if time.Since(from) >= least && sentSince(g.Responses(), from) >= o.ChurnRequests {
			break
		}
	}
	to := time.Now()
	rs := g.Stop()
	after, err := r.counters(ctx)
	if err != nil {
		return err
	}
	r.fill(before, after, churnLatency(rs, from, to, o.ConnCost))
	return nil
}

// sentSince counts the responses to requests sent at or after from.
func sentSince(rs []load.Response, from time.Time) int {
	n := 0
	for _, r := range rs {
		if !r.Sent.Before(from) {
			n++
		}
	}
	return n
}

// churnCounters are Envoy's counters the churn reads.
type churnCounters struct{ modified, warming, destroyed, opened, stay int64 }

// counters reads them in one /stats query.
func (r *churnRun) counters(ctx context.Context) (churnCounters, error) {
	all, err := r.p.Envoy().Stats(ctx)
	if err != nil {
		return churnCounters{}, err
	}
	c := churnCounters{stay: r.backends[0].Connections()}
	for name, v := range map[string]*int64{statClusterModified: &c.modified, statWarmingClusters: &c.warming, statCxDestroy: &c.destroyed, statCxTotal: &c.opened} {
		s, ok := all[name]
		if !ok {
			return c, fmt.Errorf("envoy stat %s: missing", name)
		}
		if *v, err = strconv.ParseInt(s, 10, 64); err != nil {
			return c, fmt.Errorf("envoy stat %s = %q: %w", name, s, err)
		}
	}
	return c, nil
}

func (r *churnRun) fill(before, after churnCounters, lat ChurnLatency) {
	c := r.cfg
	c.ClusterModified = after.modified - before.modified
	c.CxDestroyed = after.destroyed - before.destroyed
	c.CxOpened = after.opened - before.opened
	c.WarmingClusters = after.warming
	c.StayConns = after.stay - before.stay
	if c.Updates > 0 {
		c.DestroyedPerUpdate = float64(c.CxDestroyed) / float64(c.Updates)
		c.OpenedPerUpdate = float64(c.CxOpened) / float64(c.Updates)
	}
	c.Latency = lat
}

// churnLatency summarises the responses to requests sent in [from, to): nearest-rank
// p50, p99 and p99.9 (stats.Percentile) of every latency, failures included, and the
// share slower than cost.
func churnLatency(rs []load.Response, from, to time.Time, cost time.Duration) ChurnLatency {
	var lat []time.Duration
	var out ChurnLatency
	for _, r := range rs {
		if r.Sent.Before(from) || !r.Sent.Before(to) {
			continue
		}
		lat = append(lat, r.Latency)
		if !r.OK() {
			out.Failed++
		}
		if r.Latency > cost {
			out.Slower++
		}
	}
	out.Requests = len(lat)
	if out.Requests == 0 {
		return out
	}
	slices.Sort(lat)
	out.P50MS, out.P99MS = benchcore.Millis(stats.Percentile(lat, 50)), benchcore.Millis(stats.Percentile(lat, 99))
	out.P999MS, out.MaxMS = benchcore.Millis(stats.Percentile(lat, 99.9)), benchcore.Millis(lat[len(lat)-1])
	out.Share = float64(out.Slower) / float64(out.Requests)
	return out
}

func (r *churnRun) close() error {
	t := benchcore.Teardown{Member: r.p, Session: r.ses, Log: r.logFile, LogName: r.cfg.Log, Port: r.port}
	for _, b := range r.backends {
		if b != nil {
			t.Also = append(t.Also, b.Stop)
		}
	}
	return t.Close(r.s.Mode, r.n)
}
