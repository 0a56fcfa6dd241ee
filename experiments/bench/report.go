package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/bench/churn"
	"github.com/xds-workbench/lab/experiments/bench/ondemand"
	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
)

// Sample is one publish (the initial state or one change of the workload) in one
// configuration. Times are from the moment before the control plane built the state.
type Sample struct {
	Step    string `json:"step"`
	Version string `json:"version"`
	// Clusters is how many clusters the published state has (N, except while clusters
	// are added or removed).
	Clusters int `json:"state_clusters"`
	// Path is the path whose answer proves the change; Expect says what it must be.
	Path   string `json:"path"`
	Expect string `json:"expect"`
	// EndpointPort and Backend are the backend that must answer on Path (0 and "" when
	// Envoy itself must answer 404).
	EndpointPort int    `json:"endpoint_port"`
	Backend      string `json:"backend"`
	// ServerName is the "server" header the answer must carry (listener workload).
	ServerName string `json:"server_name,omitempty"`
	// Expected are the types every client had to ACK, each at the publisher's version
	// for it (the label with the snapshot cache, the type's cache version with linear).
	Expected []string `json:"expected_types"`
	// AwaitedUnsubscribes are the resources ("EDS/inventory-0009") the state dropped
	// that every client had to unsubscribe from before the step was over.
	AwaitedUnsubscribes []string `json:"awaited_unsubscribes,omitempty"`

	// What the control plane sent in this step, from the recorder's send events, totalled
	// over every client. Bytes is the protobuf size of each response (gRPC and HTTP/2
	// framing, about 14 bytes a message, not included).
	Responses int                            `json:"responses"`
	Resources int                            `json:"resources"`
	Redundant int                            `json:"redundant"`
	Removed   int                            `json:"removed,omitempty"`
	Bytes     int64                          `json:"bytes"`
	ByType    map[string]benchcore.TypeTally `json:"by_type"`
	Acks      int                            `json:"acks"`
	Nacks     int                            `json:"nacks"`
	Unmatched int                            `json:"unmatched,omitempty"`

	// BuildMS: build and validate the resources and hash each one.
	BuildMS float64 `json:"build_ms"`
	// PublishMS: BuildMS plus snapshot, consistency check and the cache update (until
	// ControlPlane.Publish would have returned).
	PublishMS float64 `json:"publish_ms"`
	// LastSendMS: until the last response of the step was handed to gRPC.
	LastSendMS float64 `json:"last_send_ms"`
	// AckMS: until the last client ACKed the last expected type.
	AckMS float64 `json:"ack_ms"`
	// DataPlaneMS (Envoy): until the first request on Path got what Expect says (the new
	// backend, Envoy's 404, the new server header); Polls is how many requests that took.
	DataPlaneMS *float64 `json:"data_plane_ms,omitempty"`
	Polls       int      `json:"polls,omitempty"`
	// Answer (Envoy) is that first answer that showed the change.
	Answer *benchcore.Answer `json:"answer,omitempty"`
	// SimulatedEndpoint, SimulatedStatus and SimulatedServer (simulated client): where
	// its accepted state routes Path, the status it would answer, and the server header.
	SimulatedEndpoint string `json:"simulated_endpoint,omitempty"`
	SimulatedStatus   int    `json:"simulated_status,omitempty"`
	SimulatedServer   string `json:"simulated_server,omitempty"`

	// CPUMS is this process's CPU over the step: the control plane, the recorder and, with
	// simulated clients, the clients too.
	CPUMS float64 `json:"cp_cpu_ms"`
	// HeapInuse/HeapAlloc after the step: after a GC for the initial state (what the
	// control plane keeps), as the heap stands after a change (benchcore.Heap).
	HeapInuse uint64 `json:"heap_inuse_bytes"`
	HeapAlloc uint64 `json:"heap_alloc_bytes"`
	// LoadAvg is the machine's load average (1, 5, 15 minutes) when the change began:
	// a figure measured on a busy machine says so itself.
	LoadAvg string `json:"loadavg,omitempty"`

	// TapCPUMS (series through a tap subprocess) is the tap's CPU over the step, from its
	// process clock; an in-process tap's is inside CPUMS.
	TapCPUMS *float64 `json:"tap_cpu_ms,omitempty"`

	EnvoyCPUMS      *float64 `json:"envoy_cpu_ms,omitempty"`
	EnvoyCPUTicksMS *float64 `json:"envoy_cpu_ticks_ms,omitempty"`
	EnvoyCPUSource  string   `json:"envoy_cpu_source,omitempty"`
	EnvoyRSS        *int64   `json:"envoy_rss_bytes,omitempty"`
	// EnvoyRxBytes/EnvoyTxBytes are what crossed Envoy's xDS connection during the step,
	// by Envoy's own counters: responses with gRPC and HTTP/2 framing (rx), and Envoy's
	// requests and ACKs (tx; a SotW EDS ACK repeats every subscribed name).
	EnvoyRxBytes *int64 `json:"envoy_rx_bytes,omitempty"`
	EnvoyTxBytes *int64 `json:"envoy_tx_bytes,omitempty"`

	// Proxies (Envoy) are each Envoy's own figures, in --envoys order. With K > 1 the
	// Envoy fields above are over the fleet: AckMS and DataPlaneMS the last Envoy's,
	// Polls, CPU, RSS and wire bytes the sums, Answer the last Envoy's answer.
	Proxies []ProxySample `json:"proxies,omitempty"`
	// Distribution (K > 1) is how many Envoys ran the new version when, after the
	// publish.
	Distribution *Distribution `json:"version_distribution,omitempty"`
}

// Config is one (workload, N, series) configuration.
type Config struct {
	Series string `json:"series"`
	// Cache is the library cache (snapshot or linear); Workload the change measured.
	// Reports written before both existed read as snapshot and endpoint (ReadReport).
	Cache    string        `json:"cache"`
	Workload string        `json:"workload"`
	Mode     protocol.Mode `json:"mode"`
	Versions string        `json:"sotw_versions,omitempty"`
	N        int           `json:"clusters"`
	// Clients is how many clients the control plane served: --clients, or --envoys.
	Clients int    `json:"clients"`
	Client  string `json:"client"`
	// Envoys is --envoys when above 1: that many Envoys, each its own node with its own
	// state (the same clusters, its own listener port).
	Envoys int `json:"envoys,omitempty"`
	// Proxies (Envoy) describe each Envoy. PollIntervalMS is how often each was probed
	// until its ACK (every K x 2 ms, so K Envoys cost the machine the probes of one),
	// PollIntervalAckedMS how often after it: the resolution of its data-plane time.
	Proxies             []ProxyInfo `json:"proxies,omitempty"`
	PollIntervalMS      float64     `json:"poll_interval_ms,omitempty"`
	PollIntervalAckedMS float64     `json:"poll_interval_after_ack_ms,omitempty"`
	// PerProxy (K > 1) is p50, p99 and max of each per-proxy figure over the Envoys x
	// the repeats (PerProxyMetrics).
	PerProxy map[string]benchcore.Percentiles `json:"per_proxy,omitempty"`
	// ChangedCluster and Path: the cluster the first change touches and its path (the
	// endpoint, route and listener workloads change cluster 0 every time; cluster-add
	// and cluster-remove a new one each repeat, named in each sample's path).
	ChangedCluster int    `json:"changed_cluster"`
	Path           string `json:"path"`
	Log            string `json:"xds_log"`
	// Through is "tap" when the client connected through an ADS tap (the series name
	// ends in "+tap"); TapLog is the tap's own log and TapCPU says where its CPU is
	// counted (a subprocess's in tap_cpu_ms, an in-process tap's inside cp_cpu_ms).
	Through string `json:"through,omitempty"`
	TapLog  string `json:"tap_log,omitempty"`
	TapCPU  string `json:"tap_cpu,omitempty"`
	// StuckClients is how many stuck clients sat beside the others (Options.StuckClients);
	// StuckSends is how many responses the control plane began to send them in all,
	// StuckInitialSends how many of those came before they stopped reading, and
	// StuckBytes and StuckInitialBytes the same in bytes. go-control-plane answers only
	// a watch a request opened, and a client that reads nothing sends no request, so
	// after the response it was waiting for it is sent at most one more per type,
	// however many changes follow.
	StuckClients      int    `json:"stuck_clients,omitempty"`
	StuckSends        int    `json:"stuck_sends,omitempty"`
	StuckInitialSends int    `json:"stuck_initial_sends,omitempty"`
	StuckBytes        int    `json:"stuck_bytes,omitempty"`
	StuckInitialBytes int    `json:"stuck_initial_bytes,omitempty"`
	EnvoyLog          string `json:"envoy_log,omitempty"`
	StreamsOpened     int    `json:"streams_opened"`
	// EnvoyProbeCPUUS is Envoy's CPU per data-plane request with no update in flight:
	// Polls x this is the probes' share of an update's Envoy CPU.
	EnvoyProbeCPUUS *float64 `json:"envoy_cpu_per_probe_us,omitempty"`
	// EnvoyLastRouteCPUUS is the same for /quote/<N-1>, the last of N routes: Envoy
	// matches routes in order, so this grows with N.
	EnvoyLastRouteCPUUS *float64 `json:"envoy_cpu_per_request_last_route_us,omitempty"`
	Initial             Sample   `json:"initial"`
	Updates             []Sample `json:"updates"`
	// EnvoyExits is, per Envoy, how it exited after /quitquitquit: in SotW the time
	// grows with N² (docs/performance.md, "Why SotW Envoys take long to exit").
	EnvoyExits []benchcore.EnvoyExit `json:"envoy_exits,omitempty"`
	// Stability says whether the medians held (Options.UntilStable).
	Stability *Stability `json:"stability,omitempty"`
	// Summary is median, min and max over Updates, per metric key.
	Summary   map[string]benchcore.Stat `json:"summary"`
	DurationS float64                   `json:"duration_s"`
	Error     string                    `json:"error,omitempty"`
}

// Ratio is, for one workload at one N, a SotW series' median divided by the median of
// delta with the same cache, per metric.
type Ratio struct {
	Workload string             `json:"workload"`
	Cache    string             `json:"cache"`
	N        int                `json:"clusters"`
	Series   string             `json:"series"`
	Ratios   map[string]float64 `json:"ratios"`
	// Spread is each ratio's range over the two samples' middle halves (ratioSpread).
	Spread map[string][2]float64 `json:"spread,omitempty"`
}

// Growth is, for one series and workload, the median at the largest N divided by the
// median at the smallest N.
type Growth struct {
	Workload string             `json:"workload"`
	Series   string             `json:"series"`
	FromN    int                `json:"from_clusters"`
	ToN      int                `json:"to_clusters"`
	Ratios   map[string]float64 `json:"ratios"`
	// Spread is each ratio's range over the two samples' middle halves (ratioSpread).
	Spread map[string][2]float64 `json:"spread,omitempty"`
}

// Host describes the machine and its load.
type Host struct {
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Go         string `json:"go"`
	OS         string `json:"os"`
	LoadStart  string `json:"loadavg_start,omitempty"`
	LoadEnd    string `json:"loadavg_end,omitempty"`
}

// RunOptions is what was asked for.
type RunOptions struct {
	Clusters     []int           `json:"clusters"`
	Clients      int             `json:"clients"`
	Envoys       int             `json:"envoys,omitempty"`
	Client       string          `json:"client"`
	Modes        []protocol.Mode `json:"modes"`
	SotWVersions []string        `json:"sotw_versions"`
	Caches       []string        `json:"caches"`
	Workloads    []string        `json:"workloads"`
	Repeat       int             `json:"repeat"`
	// UntilStable: configurations measured past Repeat until their medians held.
	UntilStable bool     `json:"until_stable,omitempty"`
	Through     []string `json:"through,omitempty"`
	// OnDemand are the shapes of the on-demand axis (none, vhds, vhds+cds) and
	// ColdHosts how many services each requested cold.
	OnDemand  []string `json:"on_demand,omitempty"`
	ColdHosts int      `json:"cold_hosts,omitempty"`
	// Churn are the churn axis' modes (eds, cds), with its requests per configuration,
	// load rate, interval between updates and connection cost.
	Churn         []string `json:"churn,omitempty"`
	ChurnRequests int      `json:"churn_requests,omitempty"`
	ChurnRate     int      `json:"churn_rate,omitempty"`
	ChurnEveryMS  float64  `json:"churn_every_ms,omitempty"`
	ConnCostMS    float64  `json:"conn_cost_ms,omitempty"`
	// EnvoyStats is the Envoy bootstrap's stats setting (--envoy-stats), when not
	// Envoy's defaults.
	EnvoyStats string `json:"envoy_stats,omitempty"`
	// Unprobed is where the clusters no request uses point (--unprobed), when not
	// UnprobedDeadPort.
	Unprobed string `json:"unprobed,omitempty"`
}

// Report is bench.json.
type Report struct {
	Started      string     `json:"started"`
	Finished     string     `json:"finished"`
	WallSeconds  float64    `json:"wall_seconds"`
	Host         Host       `json:"host"`
	EnvoyVersion string     `json:"envoy_version,omitempty"`
	EnvoyLine    string     `json:"envoy_version_line,omitempty"`
	Options      RunOptions `json:"options"`
	Configs      []*Config  `json:"configs"`
	Ratios       []Ratio    `json:"sotw_over_delta"`
	// TapRatios are, per "+tap" series, its medians divided by the direct series'
	// (Ratio.Series is the "+tap" one), for the same workload at the same N.
	TapRatios []Ratio  `json:"tap_over_direct,omitempty"`
	Growth    []Growth `json:"growth"`
	// OnDemand are the on-demand axis' configurations (--on-demand), in run order.
	OnDemand []*ondemand.OnDemandConfig `json:"on_demand,omitempty"`
	// Churn are the churn axis' configurations (--churn), in run order.
	Churn []*churn.ChurnConfig `json:"churn,omitempty"`
}

func newReport(o *benchcore.Options, bin envoy.Binary) *Report {
	r := &Report{
		Started: time.Now().UTC().Format(time.RFC3339),
		Host:    host(),
		Options: RunOptions{Clusters: o.Clusters, Clients: o.Clients, Client: o.Client, Modes: o.Modes, Workloads: o.Workloads, Repeat: o.Repeat, UntilStable: o.UntilStable},
	}
	if !slices.Equal(o.Through, benchcore.DefaultThrough) {
		r.Options.Through = o.Through
	}
	if o.Envoys > 1 {
		r.Options.Envoys = o.Envoys
	}
	if o.EnvoyStats != bootstrap.StatsAll {
		r.Options.EnvoyStats = o.EnvoyStats
	}
	if o.Unprobed != benchcore.UnprobedDeadPort {
		r.Options.Unprobed = o.Unprobed
	}
	for _, od := range o.OnDemand {
		r.Options.OnDemand = append(r.Options.OnDemand, benchcore.ShapeName(od))
	}
	if len(o.OnDemand) > 0 {
		r.Options.ColdHosts = o.ColdHosts
	}
	if len(o.Churn) > 0 {
		r.Options.Churn, r.Options.ChurnRequests, r.Options.ChurnRate = o.Churn, o.ChurnRequests, o.ChurnRate
		r.Options.ChurnEveryMS, r.Options.ConnCostMS = benchcore.Millis(o.ChurnEvery), benchcore.Millis(o.ConnCost)
	}
	for _, c := range o.Caches {
		r.Options.Caches = append(r.Options.Caches, string(c))
	}
	if slices.Contains(o.Modes, protocol.SotW) {
		for _, v := range o.SotWVersions {
			r.Options.SotWVersions = append(r.Options.SotWVersions, string(v))
		}
	}
	if bin.Path != "" {
		r.EnvoyVersion, r.EnvoyLine = bin.Version, bin.VersionLine
	}
	return r
}

func (r *Report) finish(start time.Time) {
	r.Finished = time.Now().UTC().Format(time.RFC3339)
	r.WallSeconds = time.Since(start).Seconds()
	r.Host.LoadEnd = benchcore.LoadAvg()
	r.Ratios = ratios(r.Configs)
	r.Growth = growth(r.Configs)
	r.TapRatios = tapRatios(r.Configs)
}

// Metric is one figure of a sample.
type Metric struct {
	Key   string
	Label string
	Unit  string // "B", "ms" or "" (a count)
	get   func(Sample) (float64, bool)
}

func always(f func(Sample) float64) func(Sample) (float64, bool) {
	return func(s Sample) (float64, bool) { return f(s), true }
}

func opt(f func(Sample) *float64) func(Sample) (float64, bool) {
	return func(s Sample) (float64, bool) {
		if v := f(s); v != nil {
			return *v, true
		}
		return 0, false
	}
}

func optInt(f func(Sample) *int64) func(Sample) (float64, bool) {
	return func(s Sample) (float64, bool) {
		if v := f(s); v != nil {
			return float64(*v), true
		}
		return 0, false
	}
}

// Metrics are the figures summarized per configuration, in table order.
var Metrics = []Metric{
	{"resources", "resources sent", "", always(func(s Sample) float64 { return float64(s.Resources) })},
	{"responses", "responses sent", "", always(func(s Sample) float64 { return float64(s.Responses) })},
	{"bytes", "bytes sent", "B", always(func(s Sample) float64 { return float64(s.Bytes) })},
	{"redundant", "redundant resources", "", always(func(s Sample) float64 { return float64(s.Redundant) })},
	{"removed", "resources removed", "", always(func(s Sample) float64 { return float64(s.Removed) })},
	{"envoy_rx_bytes", "bytes received by Envoy", "B", optInt(func(s Sample) *int64 { return s.EnvoyRxBytes })},
	{"envoy_tx_bytes", "bytes sent by Envoy", "B", optInt(func(s Sample) *int64 { return s.EnvoyTxBytes })},
	{"build_ms", "build", "ms", always(func(s Sample) float64 { return s.BuildMS })},
	{"publish_ms", "build+publish", "ms", always(func(s Sample) float64 { return s.PublishMS })},
	{"last_send_ms", "publish to last send", "ms", always(func(s Sample) float64 { return s.LastSendMS })},
	{"ack_ms", "publish to last ACK", "ms", always(func(s Sample) float64 { return s.AckMS })},
	{"data_plane_ms", "publish to the change answering via Envoy", "ms", opt(func(s Sample) *float64 { return s.DataPlaneMS })},
	{"cp_cpu_ms", "control-plane CPU", "ms", always(func(s Sample) float64 { return s.CPUMS })},
	{"heap_inuse", "control-plane heap in use", "B", always(func(s Sample) float64 { return float64(s.HeapInuse) })},
	{"envoy_cpu_ms", "Envoy CPU", "ms", opt(func(s Sample) *float64 { return s.EnvoyCPUMS })},
	{"tap_cpu_ms", "tap CPU", "ms", opt(func(s Sample) *float64 { return s.TapCPUMS })},
	{"envoy_rss", "Envoy RSS", "B", optInt(func(s Sample) *int64 { return s.EnvoyRSS })},
}

// MetricByKey finds a metric.
func MetricByKey(key string) (Metric, bool) {
	for _, m := range Metrics {
		if m.Key == key {
			return m, true
		}
	}
	return Metric{}, false
}

// Value reads metric key from s.
func (s Sample) Value(key string) (float64, bool) {
	m, ok := MetricByKey(key)
	if !ok {
		return 0, false
	}
	return m.get(s)
}

func summarize(samples []Sample) map[string]benchcore.Stat {
	out := map[string]benchcore.Stat{}
	for _, m := range Metrics {
		var v []float64
		for _, s := range samples {
			if x, ok := m.get(s); ok {
				v = append(v, x)
			}
		}
		if len(v) > 0 {
			out[m.Key] = benchcore.StatOf(v)
		}
	}
	return out
}

// ratioMetrics are the figures compared between protocols and sizes: all of them (a
// figure whose denominator is 0, such as delta's redundant resources, is left out).
var ratioMetrics = func() []string {
	out := make([]string, len(Metrics))
	for i, m := range Metrics {
		out[i] = m.Key
	}
	return out
}()

func find(cfgs []*Config, workload, series string, n int) *Config {
	for _, c := range cfgs {
		if c.Workload == workload && c.Series == series && c.N == n && c.Error == "" {
			return c
		}
	}
	return nil
}

// ratios divides each SotW series' medians by those of delta with the same cache, for
// the same workload at the same N, from the same run.
func ratios(cfgs []*Config) []Ratio {
	var out []Ratio
	for _, c := range cfgs {
		if c.Mode != protocol.SotW || c.Error != "" {
			continue
		}
		name := benchcore.SeriesName(publish.Cache(c.Cache), protocol.Delta, "")
		if c.Through == benchcore.ThroughTap {
			name += benchcore.TapSuffix
		}
		d := find(cfgs, c.Workload, name, c.N)
		if d == nil {
			continue
		}
		out = append(out, medianRatio(c, d))
	}
	return out
}

// medianRatio divides c's medians by d's, metric by metric (ratioMetrics).
func medianRatio(c, d *Config) Ratio {
	r := Ratio{Workload: c.Workload, Cache: c.Cache, N: c.N, Series: c.Series}
	r.Ratios, r.Spread = divide(c.Summary, d.Summary)
	return r
}

// divide is num's medians over den's, metric by metric (ratioMetrics), each with its
// spread when both samples have quartiles.
func divide(num, den map[string]benchcore.Stat) (map[string]float64, map[string][2]float64) {
	ratios, spreads := map[string]float64{}, map[string][2]float64{}
	for _, k := range ratioMetrics {
		a, ok1 := num[k]
		b, ok2 := den[k]
		if !ok1 || !ok2 || b.Median <= 0 {
			continue
		}
		ratios[k] = a.Median / b.Median
		if sp := ratioSpread(a, b); sp[1] > 0 {
			spreads[k] = sp
		}
	}
	if len(spreads) == 0 {
		spreads = nil
	}
	return ratios, spreads
}

// tapRatios divides each "+tap" series' medians by those of the same series run
// directly, for the same workload at the same N, from the same run.
func tapRatios(cfgs []*Config) []Ratio {
	var out []Ratio
	for _, c := range cfgs {
		if c.Through != benchcore.ThroughTap || c.Error != "" {
			continue
		}
		d := find(cfgs, c.Workload, strings.TrimSuffix(c.Series, benchcore.TapSuffix), c.N)
		if d == nil {
			continue
		}
		out = append(out, medianRatio(c, d))
	}
	return out
}

// growth compares each series' largest N with its smallest, per workload.
func growth(cfgs []*Config) []Growth {
	type key struct{ workload, series string }
	var order []key
	lo, hi := map[key]*Config{}, map[key]*Config{}
	for _, c := range cfgs {
		if c.Error != "" {
			continue
		}
		k := key{c.Workload, c.Series}
		if _, ok := lo[k]; !ok {
			order = append(order, k)
			lo[k], hi[k] = c, c
		}
		if c.N < lo[k].N {
			lo[k] = c
		}
		if c.N > hi[k].N {
			hi[k] = c
		}
	}
	var out []Growth
	for _, k := range order {
		a, b := lo[k], hi[k]
		if a.N == b.N {
			continue
		}
		g := Growth{Workload: k.workload, Series: k.series, FromN: a.N, ToN: b.N}
		g.Ratios, g.Spread = divide(b.Summary, a.Summary)
		out = append(out, g)
	}
	return out
}

// WriteFiles writes bench.json, bench.md and bench.svg into dir, and with --envoys K > 1
// versions.svg.
func (r *Report) WriteFiles(dir string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode bench.json: %w", err)
	}
	var errs []error
	files := map[string][]byte{
		"bench.json": append(b, '\n'),
		"bench.md":   []byte(r.Markdown()),
		"bench.svg":  r.SVG(),
	}
	if r.fleet() {
		files[versionsSVG] = r.VersionsSVG()
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			errs = append(errs, fmt.Errorf("write %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// ReadReport parses a bench.json.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read bench report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	// Reports from before the cache and workload axes measured the snapshot cache and
	// the endpoint change.
	for _, c := range r.Configs {
		if c.Cache == "" {
			c.Cache = string(publish.SnapshotCache)
		}
		if c.Workload == "" {
			c.Workload = benchcore.WorkloadEndpoint
		}
	}
	for i := range r.Ratios {
		if r.Ratios[i].Cache == "" {
			r.Ratios[i].Cache = string(publish.SnapshotCache)
		}
		if r.Ratios[i].Workload == "" {
			r.Ratios[i].Workload = benchcore.WorkloadEndpoint
		}
	}
	for i := range r.Growth {
		if r.Growth[i].Workload == "" {
			r.Growth[i].Workload = benchcore.WorkloadEndpoint
		}
	}
	if len(r.Options.Caches) == 0 {
		r.Options.Caches = []string{string(publish.SnapshotCache)}
	}
	if len(r.Options.Workloads) == 0 {
		r.Options.Workloads = []string{benchcore.WorkloadEndpoint}
	}
	return &r, nil
}
