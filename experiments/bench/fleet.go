package bench

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/chart"
	"github.com/xds-workbench/lab/experiments/table"
)

// ProxyInfo describes one Envoy of a configuration.
type ProxyInfo struct {
	// Node is the node ID it sends (bench-envoy-<i> with --envoys K > 1).
	Node string `json:"node"`
	// ListenerPort is where its own state puts its listener: the data-plane probes go
	// there.
	ListenerPort int    `json:"listener_port"`
	AdminAddr    string `json:"admin_addr"`
	Bootstrap    string `json:"bootstrap"`
	EnvoyLog     string `json:"envoy_log"`
}

// ProxySample is one Envoy's figures in one step. Times are from the same moment as the
// sample's (before the control plane built the new states).
type ProxySample struct {
	Node string `json:"node"`
	// Stream is the ADS stream it ACKed on (the xds.log's stream id).
	Stream int64 `json:"stream"`
	// Versions are the versions it had to ACK, per type: its own publisher's.
	Versions map[string]string `json:"versions"`
	// PublishedMS: until its node's Publish returned. It can come after AckMS: the
	// LinearCache sends each type as it updates it, before Publish returns.
	PublishedMS float64 `json:"published_ms"`
	// AckMS: until its stream ACKed every awaited type at its version (and let go of what
	// went away): from then on it runs the new version, as xDS sees it.
	AckMS float64 `json:"ack_ms"`
	// DataPlaneMS: until the first request through its own listener showed the change;
	// Polls is how many requests that took and Answer what the request got.
	DataPlaneMS *float64          `json:"data_plane_ms,omitempty"`
	Polls       int               `json:"polls,omitempty"`
	Answer      *benchcore.Answer `json:"answer,omitempty"`
	// Its CPU over the step, RSS after it, and the bytes on its xDS connection.
	EnvoyCPUMS   *float64 `json:"envoy_cpu_ms,omitempty"`
	EnvoyRSS     *int64   `json:"envoy_rss_bytes,omitempty"`
	EnvoyRxBytes *int64   `json:"envoy_rx_bytes,omitempty"`
	EnvoyTxBytes *int64   `json:"envoy_tx_bytes,omitempty"`
}

// Distribution is which version the Envoys of a fleet ran, over time, in one step:
// element k of AckedMS is when k+1 of them had ACKed the new version (K-k-1 still ran
// From), element k of AnsweringMS when k+1 answered with the change through their own
// listener. Seed 003 §13.2: watch this, not the total ACK count, since different
// proxies briefly run different versions.
type Distribution struct {
	// From is the version the previous step published ("" for the initial state), To
	// the step's.
	From        string    `json:"from,omitempty"`
	To          string    `json:"to"`
	AckedMS     []float64 `json:"acked_ms"`
	AnsweringMS []float64 `json:"answering_ms"`
}

// distributionOf sorts the Envoys' ACK and data-plane times of a step.
func distributionOf(ps []ProxySample, from, to string) *Distribution {
	d := &Distribution{From: from, To: to}
	for _, p := range ps {
		d.AckedMS = append(d.AckedMS, p.AckMS)
		if p.DataPlaneMS != nil {
			d.AnsweringMS = append(d.AnsweringMS, *p.DataPlaneMS)
		}
	}
	slices.Sort(d.AckedMS)
	slices.Sort(d.AnsweringMS)
	return d
}

// At is how many Envoys ran the new version t ms after the publish: by their ACK, and by
// the data plane.
func (d *Distribution) At(t float64) (acked, answering int) {
	count := func(v []float64) int {
		n := 0
		for _, x := range v {
			if x <= t {
				n++
			}
		}
		return n
	}
	return count(d.AckedMS), count(d.AnsweringMS)
}

// spread is the window in which the fleet ran mixed versions: last minus first.
func spread(v []float64) (float64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	return slices.Max(v) - slices.Min(v), true
}

// proxyMetric is one per-Envoy figure.
type proxyMetric struct {
	key, label, unit string
	get              func(ProxySample) (float64, bool)
}

// PerProxyMetrics are the per-Envoy figures summarized in a configuration's per_proxy.
var PerProxyMetrics = []proxyMetric{
	{"ack_ms", "publish to this Envoy's ACK", "ms", func(p ProxySample) (float64, bool) { return p.AckMS, true }},
	{"data_plane_ms", "publish to the change answering via this Envoy", "ms", func(p ProxySample) (float64, bool) {
		if p.DataPlaneMS == nil {
			return 0, false
		}
		return *p.DataPlaneMS, true
	}},
	// The same two from this Envoy's own publish: what is left once the publish loop's
	// ramp over K nodes (K publishes one after another, on a machine the K clients
	// share) is taken out.
	{"ack_own_ms", "this Envoy's publish to its ACK", "ms", func(p ProxySample) (float64, bool) { return p.AckMS - p.PublishedMS, true }},
	{"data_plane_own_ms", "this Envoy's publish to the change answering via it", "ms", func(p ProxySample) (float64, bool) {
		if p.DataPlaneMS == nil {
			return 0, false
		}
		return *p.DataPlaneMS - p.PublishedMS, true
	}},
	{"envoy_cpu_ms", "this Envoy's CPU", "ms", func(p ProxySample) (float64, bool) {
		if p.EnvoyCPUMS == nil {
			return 0, false
		}
		return *p.EnvoyCPUMS, true
	}},
	{"envoy_rss", "this Envoy's RSS", "B", func(p ProxySample) (float64, bool) {
		if p.EnvoyRSS == nil {
			return 0, false
		}
		return float64(*p.EnvoyRSS), true
	}},
}

// perProxySummary is each per-Envoy figure's percentiles over every Envoy of every
// update.
func perProxySummary(updates []Sample) map[string]benchcore.Percentiles {
	out := map[string]benchcore.Percentiles{}
	for _, m := range PerProxyMetrics {
		var v []float64
		for _, s := range updates {
			for _, p := range s.Proxies {
				if x, ok := m.get(p); ok {
					v = append(v, x)
				}
			}
		}
		if p, ok := benchcore.PercentilesOf(v); ok {
			out[m.key] = p
		}
	}
	return out
}

// fleet reports whether any configuration ran more than one Envoy.
func (r *Report) fleet() bool {
	for _, c := range r.Configs {
		if c.Envoys > 1 {
			return true
		}
	}
	return false
}

// versionsSVG is the version-distribution chart's file name.
const versionsSVG = "versions.svg"

// fleetTables are the report's blocks for --envoys K > 1: the per-proxy percentiles and
// the version distribution.
func (r *Report) fleetTables(ok []*Config) []benchcore.Block {
	var fl []*Config
	k := 0
	for _, c := range ok {
		if c.Envoys > 1 {
			fl = append(fl, c)
			k = max(k, c.Envoys)
		}
	}
	if len(fl) == 0 {
		return nil
	}
	noun := fleetNoun(fl[0].Client)
	return []benchcore.Block{r.perProxyTable(fl, k, noun), distributionTable(fl, k, noun)}
}

// perProxyCell is a per-proxy percentile of key, picked by f.
func perProxyCell(c *Config, key string, f func(benchcore.Percentiles) float64) string {
	p, ok := c.PerProxy[key]
	if !ok {
		return "-"
	}
	return benchcore.FmtMS(f(p))
}

// perProxyTable is the per-proxy percentiles of the fleet configurations fl, K at most k.
func (r *Report) perProxyTable(fl []*Config, k int, noun string) benchcore.Block {
	pc := perProxyCell
	p50 := func(p benchcore.Percentiles) float64 { return p.P50 }
	p99 := func(p benchcore.Percentiles) float64 { return p.P99 }
	pmax := func(p benchcore.Percentiles) float64 { return p.Max }
	per := benchcore.Block{
		Title: fmt.Sprintf("Per proxy: %d %s, each its own node, state and listener", k, noun),
		Note: fmt.Sprintf("p50, p99 and max over the Envoys × %d repeat(s), nearest rank (p99 of fewer than 100 values is the max). "+
			"ACK: publish to that Envoy's ACK of every awaited type at its own publisher's version. "+
			"data plane: publish to the first request through that Envoy's own listener showing the change (each Envoy probed every %s ms until its ACK, every %s ms after). "+
			"own publish: the same from that Envoy's own publish (p50 / p99), without the ramp of the K publishes. "+
			"spread: last Envoy minus first, median over the repeats: how long the fleet ran mixed versions. "+
			"Envoy CPU: summed over the Envoys, median over the repeats; RSS: each Envoy's after the last change (min–max), and their sum.",
			r.Options.Repeat, benchcore.FmtMS(fl[0].PollIntervalMS), benchcore.FmtMS(fl[0].PollIntervalAckedMS)),
		Table: table.Table{Head: append(slices.Clone(identHead), "Envoys", "ACK p50 ms", "ACK p99 ms", "ACK max ms", "ACK spread ms",
			"data plane p50 ms", "data plane p99 ms", "data plane max ms", "data plane spread ms",
			"own publish: ACK ms", "own publish: data plane ms", "Envoy CPU ms (sum)", "Envoy RSS each", "Envoy RSS sum")},
	}
	both := func(c *Config, key string) string { return pc(c, key, p50) + " / " + pc(c, key, p99) }
	for _, c := range fl {
		row := append(identOf(c), fmt.Sprint(c.Envoys),
			pc(c, "ack_ms", p50), pc(c, "ack_ms", p99), pc(c, "ack_ms", pmax), spreadCell(c, false),
			pc(c, "data_plane_ms", p50), pc(c, "data_plane_ms", p99), pc(c, "data_plane_ms", pmax), spreadCell(c, true),
			both(c, "ack_own_ms"), both(c, "data_plane_own_ms"), cell(c, "envoy_cpu_ms", true), rssEachCell(c), cell(c, "envoy_rss", false))
		per.Add(row)
	}
	return per
}

// distributionTable is when the k-th proxy of each fleet configuration ran each step's
// new version, by ACK and by the data plane.
func distributionTable(fl []*Config, k int, noun string) benchcore.Block {
	dist := benchcore.Block{
		Title: "Version distribution: when the k-th of the " + noun + " ran the new version (ms after the publish)",
		Note: "Every step twice: by ACK (its stream ACKed every awaited type: from then on it runs the new version as xDS sees it) " +
			"and by data plane (a request through its own listener showed the change). Column k/K: from that moment k Envoys ran the new version " +
			"and K−k still the old one. " + versionsSVG + " draws the same as a step chart (median over the repeats).",
		Table: table.Table{Head: append(slices.Clone(identHead), "step", "version", "by")},
	}
	for i := 1; i <= k; i++ {
		dist.Head = append(dist.Head, fmt.Sprintf("%d/%d", i, k))
	}
	for _, c := range fl {
		for _, s := range append([]Sample{c.Initial}, c.Updates...) {
			d := s.Distribution
			if d == nil {
				continue
			}
			v := d.To
			if d.From != "" {
				v = d.From + "→" + d.To
			}
			for _, by := range []struct {
				name string
				at   []float64
			}{{"ACK", d.AckedMS}, {"data plane", d.AnsweringMS}} {
				row := append(identOf(c), s.Step, v, by.name)
				for i := 0; i < k; i++ {
					if i < len(by.at) {
						row = append(row, benchcore.FmtMS(by.at[i]))
					} else {
						row = append(row, "-")
					}
				}
				dist.Add(row)
			}
		}
	}
	return dist
}

// times is the moments the k-th Envoy ran the new version, by ACK or by the data plane;
// ok is false for a step without a distribution (one Envoy).
func (d *Distribution) times(dataPlane bool) (at []float64, ok bool) {
	if d == nil {
		return nil, false
	}
	if dataPlane {
		return d.AnsweringMS, true
	}
	return d.AckedMS, true
}

// spreadCell is the median over the updates of the window the fleet ran mixed versions
// (by ACK, or by the data plane).
func spreadCell(c *Config, dataPlane bool) string {
	var v []float64
	for _, s := range c.Updates {
		at, ok := s.Distribution.times(dataPlane)
		if !ok {
			continue
		}
		if x, ok := spread(at); ok {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return "-"
	}
	return benchcore.FmtMS(benchcore.StatOf(v).Median)
}

// rssEachCell is the range of the Envoys' RSS after the last update.
func rssEachCell(c *Config) string {
	if len(c.Updates) == 0 {
		return "-"
	}
	var v []float64
	for _, p := range c.Updates[len(c.Updates)-1].Proxies {
		if p.EnvoyRSS != nil {
			v = append(v, float64(*p.EnvoyRSS))
		}
	}
	if len(v) == 0 {
		return "-"
	}
	lo, hi := slices.Min(v), slices.Max(v)
	if lo == hi {
		return benchcore.FmtBytes(lo)
	}
	return benchcore.FmtBytes(lo) + "–" + benchcore.FmtBytes(hi)
}

// medianCurve is, for one configuration, the median over the updates of the moment the
// k-th Envoy ran the new version (by ACK, or by the data plane), k = 1..K.
func medianCurve(c *Config, dataPlane bool) []float64 {
	var out []float64
	for k := 0; ; k++ {
		var v []float64
		for _, s := range c.Updates {
			at, ok := s.Distribution.times(dataPlane)
			if !ok {
				continue
			}
			if k < len(at) {
				v = append(v, at[k])
			}
		}
		if len(v) == 0 {
			return out
		}
		out = append(out, benchcore.StatOf(v).Median)
	}
}

// VersionsSVG draws versions.svg: for each workload and N, how many of the K Envoys ran
// the new version against the time since the publish, one step line per series by ACK
// (solid) and one by the data plane (dashed): the median over the repeats of the moment
// the k-th Envoy got there.
func (r *Report) VersionsSVG() []byte {
	keys, k := r.versionPanels()
	const (
		w, h     = 470.0, 260.0
		ml, mt   = 60.0, 50.0
		mb, gap  = 55.0, 40.0
		perRow   = 2
		legendHt = 40.0
	)
	rows := (len(keys) + perRow - 1) / perRow
	if rows == 0 {
		rows = 1
	}
	cw := float64(min(perRow, max(len(keys), 1)))*(ml+w+gap) + 20
	chH := float64(rows)*(mt+h+mb) + legendHt
	var b bytes.Buffer
	chart.Open(&b, cw, chH, fmt.Sprintf("lab bench: how many of %d Envoys ran the new version, against the time since the publish", k))
	names := r.SeriesNames()
	colors := chart.Colors(names)
	for pi, pk := range keys {
		cfgs, xmax := r.panelConfigs(pk)
		a := chart.StepArea{X0: ml + float64(pi%perRow)*(ml+w+gap), Y0: float64(pi/perRow)*(mt+h+mb) + mt, W: w, H: h, XMax: xmax, K: k}
		versionsPanel(&b, a, pk, cfgs, colors)
	}
	chart.LineLegend(&b, names, colors, ml, float64(rows)*(mt+h+mb)+10, "solid: by ACK; dashed: by the data plane")
	chart.Close(&b)
	return b.Bytes()
}

// panelKey is one panel of versions.svg: a workload at one N.
type panelKey struct {
	workload string
	n        int
}

// versionPanels are the panels of versions.svg in run order, and the largest K.
func (r *Report) versionPanels() ([]panelKey, int) {
	var keys []panelKey
	k := 0
	for _, c := range r.Configs {
		if c.Envoys <= 1 || c.Error != "" {
			continue
		}
		k = max(k, c.Envoys)
		pk := panelKey{c.Workload, c.N}
		if !slices.Contains(keys, pk) {
			keys = append(keys, pk)
		}
	}
	return keys, k
}

// panelConfigs are the fleet configurations of a panel and its time axis' end.
func (r *Report) panelConfigs(pk panelKey) ([]*Config, float64) {
	var cfgs []*Config
	xmax := 0.0
	for _, c := range r.Configs {
		if c.Workload == pk.workload && c.N == pk.n && c.Envoys > 1 && c.Error == "" {
			cfgs = append(cfgs, c)
			for _, dp := range []bool{false, true} {
				for _, t := range medianCurve(c, dp) {
					xmax = math.Max(xmax, t)
				}
			}
		}
	}
	return cfgs, niceCeil(xmax * 1.05)
}

// versionsPanel draws one panel: its frame and grid, and a step curve per
// configuration, by ACK and by the data plane.
func versionsPanel(b *bytes.Buffer, a chart.StepArea, pk panelKey, cfgs []*Config, colors map[string]string) {
	id := fmt.Sprintf("versions-%s-N%d", pk.workload, pk.n)
	attrs := fmt.Sprintf(` data-workload="%s" data-clusters="%d"`, chart.Esc(pk.workload), pk.n)
	a.Open(b, id, attrs, fmt.Sprintf("%s, N=%d: Envoys on the new version", pk.workload, pk.n), "ms after the publish", benchcore.FmtMS)
	for _, c := range cfgs {
		for _, dp := range []bool{false, true} {
			a.Curve(b, versionsCurve(id, c, dp, colors[c.Series], a.K))
		}
	}
	a.Close(b)
}

// versionsCurve is how many Envoys of c ran the new version against the time, by the
// data plane (dp, dashed) or by ACK, median over the repeats.
func versionsCurve(id string, c *Config, dp bool, col string, k int) chart.StepCurve {
	by := "ack"
	if dp {
		by = "data-plane"
	}
	words := strings.ReplaceAll(by, "-", " ")
	return chart.StepCurve{
		ID:    fmt.Sprintf("%s-%s-%s", chart.Esc(id), chart.Esc(SeriesID(c.Series)), by),
		Attrs: fmt.Sprintf(` class="series" data-series="%s" data-by="%s"`, chart.Esc(c.Series), by),
		Times: medianCurve(c, dp), Color: col, Dashed: dp,
		Tip: func(i int, t float64) string {
			return fmt.Sprintf("%s %s: %d of %d Envoys on the new version by %s after %s ms (median over the repeats)", c.Series, words, i+1, k, words, benchcore.FmtMS(t))
		},
	}
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for v <= 0).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// fleetNoun names a fleet's proxies in the report: Envoys, or grpc-go clients (whose
// "listener" is the front door and whose "Envoy" CPU and RSS columns are the client
// process's own).
func fleetNoun(client string) string {
	if client == benchcore.ClientGRPC {
		return "grpc-go clients"
	}
	return "Envoys"
}
