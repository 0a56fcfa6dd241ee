package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/bench/churn"
	"github.com/xds-workbench/lab/experiments/bench/ondemand"
	"github.com/xds-workbench/lab/experiments/table"
)

// cell is a metric's median, with [min-max] when the repeats differ.
func cell(c *Config, key string, spread bool) string {
	st, ok := c.Summary[key]
	if !ok {
		return "-"
	}
	m, _ := MetricByKey(key)
	s := benchcore.Format(m.Unit, st.Median)
	if spread && st.Min != st.Max {
		s += " [" + benchcore.Format(m.Unit, st.Min) + "–" + benchcore.Format(m.Unit, st.Max) + "]"
	}
	return s
}

func sampleCell(s Sample, key string) string {
	v, ok := s.Value(key)
	if !ok {
		return "-"
	}
	m, _ := MetricByKey(key)
	return benchcore.Format(m.Unit, v)
}

// tables builds the report's blocks.
func (r *Report) tables() []benchcore.Block {
	if len(r.Configs) == 0 && len(r.Churn) > 0 {
		return churn.Tables(r.Churn)
	}
	if len(r.Configs) == 0 && len(r.OnDemand) > 0 {
		return ondemand.Tables(r.OnDemand)
	}
	var ok []*Config
	hasEnvoy := false
	for _, c := range r.Configs {
		if c.Error == "" {
			ok = append(ok, c)
			hasEnvoy = hasEnvoy || c.Client == benchcore.ClientEnvoy
		}
	}
	out := []benchcore.Block{r.sentTable(ok, hasEnvoy), r.timesTable(ok, hasEnvoy)}
	if len(r.Ratios) > 0 {
		out = append(out, r.ratioTable(hasEnvoy))
	}
	if len(r.TapRatios) > 0 {
		out = append(out, r.tapTable(ok, hasEnvoy))
	}
	if len(r.Growth) > 0 {
		out = append(out, r.growthTable(hasEnvoy))
	}
	out = append(out, r.fleetTables(ok)...)
	return append(out, initialTable(ok, hasEnvoy))
}

// identHead is what identifies a configuration: every table starts with it.
var identHead = []string{"workload", "cache", "N", "series"}

func identOf(c *Config) []string { return []string{c.Workload, c.Cache, fmt.Sprint(c.N), c.Series} }

// sentTable is what one change sends, per configuration.
func (r *Report) sentTable(ok []*Config, hasEnvoy bool) benchcore.Block {
	clients := "one client"
	if r.Options.Clients > 1 {
		clients = fmt.Sprintf("%d clients, totals over all of them", r.Options.Clients)
	}
	if r.Options.Envoys > 1 {
		clients = fmt.Sprintf("%d Envoys, totals over all of them", r.Options.Envoys)
	}
	note := fmt.Sprintf("Median over %s, %s. bytes: protobuf size of the responses as the control plane recorded them. CDS..RDS: responses×resources per response.", r.Options.repeats(), clients)
	head := append(slices.Clone(identHead), "responses", "resources", "redundant", "removed", "bytes")
	if hasEnvoy {
		note += " Envoy rx/tx: bytes on Envoy's xDS connection by its own counters (gRPC and HTTP/2 framing included; tx is Envoy's requests and ACKs)."
		head = append(head, "Envoy rx", "Envoy tx")
	}
	if wl := r.workloads(); len(wl) > 0 {
		var docs []string
		for _, w := range wl {
			docs = append(docs, w+": "+workloadDoc[w])
		}
		note += " Workloads: " + strings.Join(docs, "; ") + "."
	}
	sent := benchcore.Block{Title: "What one change sends", Note: note, Table: table.Table{Head: append(head, "CDS", "EDS", "LDS", "RDS")}}
	for _, c := range ok {
		row := append(identOf(c), cell(c, "responses", false), cell(c, "resources", false), cell(c, "redundant", false), cell(c, "removed", false), cell(c, "bytes", false))
		if hasEnvoy {
			row = append(row, cell(c, "envoy_rx_bytes", false), cell(c, "envoy_tx_bytes", false))
		}
		for _, t := range []string{"CDS", "EDS", "LDS", "RDS"} {
			row = append(row, typeCell(c, t))
		}
		sent.Add(row)
	}
	return sent
}

// repeats says how many changes each configuration measured: "9 repeat(s)", or with
// UntilStable "at least 9 repeat(s), more until the medians held".
func (o RunOptions) repeats() string {
	if o.UntilStable {
		return fmt.Sprintf("at least %d repeat(s), more until a batch moved no median by over %.0f %% (the changes column)", o.Repeat, 100*StableDrift)
	}
	return fmt.Sprintf("%d repeat(s)", o.Repeat)
}

// timesTable is how long one change takes and what it costs, per configuration.
func (r *Report) timesTable(ok []*Config, hasEnvoy bool) benchcore.Block {
	timeHead := append(slices.Clone(identHead), "build ms", "build+publish ms", "to last send ms", "to last ACK ms")
	if hasEnvoy {
		timeHead = append(timeHead, "to data plane ms")
	}
	timeHead = append(timeHead, "CP CPU ms", "CP heap")
	if hasEnvoy {
		timeHead = append(timeHead, "Envoy CPU ms", "Envoy RSS")
	}
	honest := measuredHonestly(ok)
	if honest {
		timeHead = append(timeHead, "changes", "load 1m")
	}
	cp := "CP = this process: the control plane and its recorder, plus the simulated clients, which run in-process."
	if hasEnvoy {
		cp = "to data plane: until a request through Envoy showed the change (the workload's proof). CP = this process: the control plane and its recorder, plus the data-plane probes. Envoy CPU includes the probes: polls × envoy_cpu_per_probe_us in bench.json."
	}
	if r.Options.Envoys > 1 {
		cp += " With several Envoys: to last ACK and to data plane are the last Envoy's (the per-proxy table has the others), Envoy CPU and RSS the sums over the Envoys."
	}
	times := benchcore.Block{
		Title: "How long one change takes, and what it costs",
		Note:  "Median [min–max] over the repeats, from the moment before the control plane builds the new state. " + cp,
		Table: table.Table{Head: timeHead},
	}
	for _, c := range ok {
		row := append(identOf(c), cell(c, "build_ms", true), cell(c, "publish_ms", true), cell(c, "last_send_ms", true), cell(c, "ack_ms", true))
		if hasEnvoy {
			row = append(row, cell(c, "data_plane_ms", true))
		}
		row = append(row, cell(c, "cp_cpu_ms", true), cell(c, "heap_inuse", false))
		if hasEnvoy {
			row = append(row, cell(c, "envoy_cpu_ms", true), cell(c, "envoy_rss", false))
		}
		if honest {
			row = append(row, stabilityCell(c), loadCell(c))
		}
		times.Add(row)
	}
	return times
}

// ratioTable is SotW ÷ delta at each N.
func (r *Report) ratioTable(hasEnvoy bool) benchcore.Block {
	keys := []string{"resources", "bytes"}
	if hasEnvoy {
		keys = append(keys, "envoy_rx_bytes")
	}
	keys = append(keys, "last_send_ms", "ack_ms")
	if hasEnvoy {
		keys = append(keys, "data_plane_ms")
	}
	keys = append(keys, "cp_cpu_ms")
	if hasEnvoy {
		keys = append(keys, "envoy_cpu_ms")
	}
	rt := benchcore.Block{
		Title: "SotW ÷ delta at each N (ratio of medians, same run, same cache)",
		Table: table.Table{Head: append(slices.Clone(identHead), metricLabels(keys)...)},
	}
	for _, x := range r.Ratios {
		rt.Add(append([]string{x.Workload, x.Cache, fmt.Sprint(x.N), x.Series}, ratioCells(x.Ratios, x.Spread, keys)...))
	}
	return rt
}

// growthTable is the largest N ÷ the smallest, per workload and series.
func (r *Report) growthTable(hasEnvoy bool) benchcore.Block {
	keys := []string{"resources", "bytes", "build_ms", "publish_ms", "ack_ms", "cp_cpu_ms"}
	if hasEnvoy {
		keys = append(keys, "data_plane_ms", "envoy_cpu_ms")
	}
	gt := benchcore.Block{Title: "Growth: largest N ÷ smallest N (ratio of medians)", Table: table.Table{Head: append([]string{"workload", "series", "N"}, metricLabels(keys)...)}}
	for _, g := range r.Growth {
		gt.Add(append([]string{g.Workload, g.Series, fmt.Sprintf("%d → %d", g.FromN, g.ToN)}, ratioCells(g.Ratios, g.Spread, keys)...))
	}
	return gt
}

// metricLabels are the column labels of metric keys.
func metricLabels(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		m, _ := MetricByKey(k)
		out[i] = m.Label
	}
	return out
}

// ratioCells are ratios' cells in keys' order ("-" where a ratio is missing), a time's
// or CPU's with its spread ("1.34x [1.10–1.62]"): counts do not vary between repeats.
func ratioCells(ratios map[string]float64, spreads map[string][2]float64, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = "-"
		v, ok := ratios[k]
		if !ok {
			continue
		}
		out[i] = benchcore.FmtRatio(v)
		m, _ := MetricByKey(k)
		if sp, ok := spreads[k]; ok && m.Unit == "ms" {
			out[i] += " [" + strings.TrimSuffix(benchcore.FmtRatio(sp[0]), "x") + "–" + benchcore.FmtRatio(sp[1]) + "]"
		}
	}
	return out
}

// measuredHonestly: the run recorded the load with each change (runs before it did not,
// and render as they did).
func measuredHonestly(cfgs []*Config) bool {
	for _, c := range cfgs {
		if len(c.Updates) > 0 && c.Updates[0].LoadAvg != "" {
			return true
		}
	}
	return false
}

// stabilityCell is how many changes a configuration measured and whether its medians
// held: "9", "27 stable", "36 not stable (ack 8 %)".
func stabilityCell(c *Config) string {
	n := fmt.Sprint(len(c.Updates))
	st := c.Stability
	switch {
	case st == nil || !st.Checked:
		return n
	case st.Stable:
		return n + " stable"
	}
	var moved []string
	for _, k := range stableMetrics {
		if d := st.Drift[k]; d > StableDrift {
			moved = append(moved, fmt.Sprintf("%s %.0f %%", strings.TrimSuffix(k, "_ms"), 100*d))
		}
	}
	return n + " not stable (" + strings.Join(moved, ", ") + ")"
}

// loadCell is the highest 1-minute load average any of the configuration's changes
// began in, next to the machine's CPU count in the header.
func loadCell(c *Config) string {
	hi := -1.0
	for _, s := range c.Updates {
		var one float64
		if _, err := fmt.Sscan(s.LoadAvg, &one); err == nil && one > hi {
			hi = one
		}
	}
	if hi < 0 {
		return "-"
	}
	return fmt.Sprintf("≤ %.2f", hi)
}

// initialTable is the full push to a connected, empty client, per configuration.
func initialTable(ok []*Config, hasEnvoy bool) benchcore.Block {
	initHead := append(slices.Clone(identHead), "responses", "resources", "bytes", "build+publish ms", "to full ACK ms")
	if hasEnvoy {
		initHead = append(initHead, "to endpoint ms", "Envoy rx", "Envoy CPU ms", "Envoy RSS")
	}
	initHead = append(initHead, "CP CPU ms", "CP heap")
	it := benchcore.Block{Title: "Initial state: full push to a connected, empty client", Table: table.Table{Head: initHead}}
	for _, c := range ok {
		s := c.Initial
		row := append(identOf(c), sampleCell(s, "responses"), sampleCell(s, "resources"), sampleCell(s, "bytes"), sampleCell(s, "publish_ms"), sampleCell(s, "ack_ms"))
		if hasEnvoy {
			row = append(row, sampleCell(s, "data_plane_ms"), sampleCell(s, "envoy_rx_bytes"), sampleCell(s, "envoy_cpu_ms"), sampleCell(s, "envoy_rss"))
		}
		row = append(row, sampleCell(s, "cp_cpu_ms"), sampleCell(s, "heap_inuse"))
		it.Add(row)
	}
	return it
}

// workloads lists the report's workloads in run order.
func (r *Report) workloads() []string {
	var out []string
	for _, c := range r.Configs {
		if !slices.Contains(out, c.Workload) {
			out = append(out, c.Workload)
		}
	}
	return out
}

// typeCell is "responses x resources" of one type, median over the repeats.
func typeCell(c *Config, t string) string {
	if len(c.Updates) == 0 {
		return "-"
	}
	var resp, res []float64
	for _, s := range c.Updates {
		tt := s.ByType[t]
		resp = append(resp, float64(tt.Responses))
		res = append(res, float64(tt.Resources))
	}
	a, b := benchcore.StatOf(resp).Median, benchcore.StatOf(res).Median
	if a == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f×%.0f", a, b/a)
}

func (r *Report) failures() []string {
	var out []string
	for _, c := range r.Configs {
		if c.Error != "" {
			out = append(out, fmt.Sprintf("%s %s N=%d: %s", c.Workload, c.Series, c.N, c.Error))
		}
	}
	for _, c := range r.OnDemand {
		if c.Error != "" {
			out = append(out, fmt.Sprintf("on-demand %s %s N=%d: %s", c.Shape, c.Series, c.N, c.Error))
		}
	}
	for _, c := range r.Churn {
		if c.Error != "" {
			out = append(out, fmt.Sprintf("churn %s %s N=%d: %s", c.Churn, c.Series, c.N, c.Error))
		}
	}
	return out
}

// exits lists each configuration's Envoy exits.
func (r *Report) exits() []string {
	var out []string
	for _, c := range r.Configs {
		if len(c.EnvoyExits) == 0 {
			continue
		}
		ss := make([]string, len(c.EnvoyExits))
		for i, x := range c.EnvoyExits {
			ss[i] = x.String()
		}
		out = append(out, fmt.Sprintf("%s %s N=%d: %s", c.Workload, c.Series, c.N, strings.Join(ss, ", ")))
	}
	return out
}

// stuck lists what each configuration sent its stuck clients once they stopped reading.
func (r *Report) stuck() []string {
	var out []string
	for _, c := range r.Configs {
		if c.StuckClients == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s %s N=%d: %d stuck client(s); %d response(s), %s after they stopped reading (%d, %s before)",
			c.Workload, c.Cache, c.Series, c.N, c.StuckClients, c.StuckSends-c.StuckInitialSends,
			benchcore.FmtBytes(float64(c.StuckBytes-c.StuckInitialBytes)), c.StuckInitialSends, benchcore.FmtBytes(float64(c.StuckInitialBytes))))
	}
	return out
}

func (r *Report) header() []string {
	client := r.Options.Client
	if r.Options.Clients > 1 {
		client = fmt.Sprintf("%d fan-out clients (ack-only)", r.Options.Clients)
	} else if r.Options.Envoys > 1 && client == benchcore.ClientGRPC {
		client = fmt.Sprintf("%d grpc-go clients (lab grpc-client), each its own node, state and front door", r.Options.Envoys)
	} else if r.Options.Envoys > 1 {
		client = fmt.Sprintf("%d Envoys %s (--concurrency 1 each), each its own node, state and listener", r.Options.Envoys, r.EnvoyVersion)
	} else if r.EnvoyVersion != "" {
		client = "Envoy " + r.EnvoyVersion + " (--concurrency 1)"
	}
	if r.Options.EnvoyStats != "" {
		client += ", --envoy-stats " + r.Options.EnvoyStats
	} else if client == benchcore.ClientSim {
		client = "simulated Envoy (in-process)"
	}
	if r.Options.Unprobed != "" {
		client += "; unprobed clusters: " + r.Options.Unprobed
	}
	perConfig := r.Options.repeats()
	if len(r.Options.Churn) > 0 {
		perConfig = fmt.Sprintf("%d requests", r.Options.ChurnRequests)
	}
	return []string{
		fmt.Sprintf("started %s, wall time %.1f s", r.Started, r.WallSeconds),
		fmt.Sprintf("machine: %d CPU(s), %s, %s; load average %s at start, %s at end", r.Host.CPUs, r.Host.OS, r.Host.Go, benchcore.OrDash(r.Host.LoadStart), benchcore.OrDash(r.Host.LoadEnd)),
		fmt.Sprintf("client: %s; %s per configuration", client, perConfig),
		fmt.Sprintf("workloads: %s; caches: %s%s", workloadsLine(r.Options), strings.Join(r.Options.Caches, ", "), throughLine(r.Options.Through)),
	}
}

// workloadsLine names the workloads, or the on-demand axis' shapes and sequence.
func workloadsLine(o RunOptions) string {
	if len(o.Churn) > 0 {
		return fmt.Sprintf("churn axis, %s; each: %d requests at %d/s through Envoy over %d HTTP/1.1 connections, an update of cluster 0's endpoints every %.0f ms (one endpoint stays, one alternates), each backend %.0f ms slower on a connection's first request",
			strings.Join(o.Churn, ", "), o.ChurnRequests, o.ChurnRate, churn.ChurnConnections, o.ChurnEveryMS, o.ConnCostMS)
	}
	if len(o.OnDemand) == 0 {
		return strings.Join(o.Workloads, ", ")
	}
	return fmt.Sprintf("on-demand axis, shapes %s (delta only); each: initial push, %d cold then warm requests, a service add (cluster-add), %d one-service change(s) (endpoint)",
		strings.Join(o.OnDemand, ", "), o.ColdHosts, o.Repeat)
}

// WriteTable prints the report's tables.
func (r *Report) WriteTable(w io.Writer) {
	for _, l := range r.header() {
		fmt.Fprintln(w, l)
	}
	for _, t := range r.tables() {
		t.Text(w)
	}
	if f := r.failures(); len(f) > 0 {
		fmt.Fprintf(w, "\nFAILED configurations:\n  %s\n", strings.Join(f, "\n  "))
	}
}

// Markdown is bench.md.
func (r *Report) Markdown() string {
	var b strings.Builder
	b.WriteString("# lab bench\n\n")
	for _, l := range r.header() {
		b.WriteString("- " + l + "\n")
	}
	if len(r.Configs) > 0 {
		b.WriteString("\n![bytes and time to converge against N, one row per workload](bench.svg)\n")
	}
	if r.fleet() {
		b.WriteString("\n![how many Envoys ran the new version against the time since the publish, by ACK and by the data plane](" + versionsSVG + ")\n")
	}
	for _, t := range r.tables() {
		t.Markdown(&b)
	}
	if x := r.exits(); len(x) > 0 {
		b.WriteString("\n### Envoy exit (from /quitquitquit to the process gone)\n\n")
		for _, l := range x {
			b.WriteString("- " + l + "\n")
		}
	}
	if x := r.stuck(); len(x) > 0 {
		b.WriteString("\n### Stuck clients (sent after they stopped reading; they count in no figure above)\n\n")
		for _, l := range x {
			b.WriteString("- " + l + "\n")
		}
	}
	if f := r.failures(); len(f) > 0 {
		b.WriteString("\n### Failed configurations\n\n")
		for _, x := range f {
			b.WriteString("- " + x + "\n")
		}
	}
	return b.String()
}

// brief is one progress line for a sample.
func (s Sample) brief() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d response(s), %d resource(s)", s.Responses, s.Resources)
	if s.Redundant > 0 {
		fmt.Fprintf(&b, " (%d redundant)", s.Redundant)
	}
	if s.Removed > 0 {
		fmt.Fprintf(&b, ", %d removed", s.Removed)
	}
	fmt.Fprintf(&b, ", %s; last ACK %s ms", benchcore.FmtBytes(float64(s.Bytes)), benchcore.FmtMS(s.AckMS))
	if s.DataPlaneMS != nil {
		fmt.Fprintf(&b, ", %s on %s after %s ms", s.Expect, s.Path, benchcore.FmtMS(*s.DataPlaneMS))
	}
	fmt.Fprintf(&b, "; CP CPU %s ms", benchcore.FmtMS(s.CPUMS))
	if s.EnvoyCPUMS != nil {
		fmt.Fprintf(&b, ", Envoy CPU %s ms", benchcore.FmtMS(*s.EnvoyCPUMS))
	}
	return b.String()
}

// tapTable sets each "+tap" series beside the same series run directly: the medians of
// publish to last ACK (and to the data plane, with Envoy), their ratio, this process's
// CPU in both, and the tap's own CPU when it ran as a subprocess.
func (r *Report) tapTable(ok []*Config, hasEnvoy bool) benchcore.Block {
	head := []string{"workload", "cache", "N", "series", "to last ACK ms direct", "to last ACK ms +tap", "ACK tap ÷ direct"}
	if hasEnvoy {
		head = append(head, "to data plane ms direct", "to data plane ms +tap", "data plane tap ÷ direct")
	}
	head = append(head, "CP CPU ms direct", "CP CPU ms +tap", "tap CPU ms")
	t := benchcore.Block{
		Title: "Through the tap ÷ direct at each N (ratio of medians, same run)",
		Note: "Each series ran directly and then through an ADS tap (experiments/tap) at the same N, one after the other. " +
			"tap CPU: the tap subprocess's CPU over the change, from its process clock; \"in CP\" when the tap ran in this process, so its CPU is inside CP CPU.",
		Table: table.Table{Head: head},
	}
	for _, x := range r.TapRatios {
		c := find(ok, x.Workload, x.Series, x.N)
		d := find(ok, x.Workload, strings.TrimSuffix(x.Series, benchcore.TapSuffix), x.N)
		if c == nil || d == nil {
			continue
		}
		ratio := func(k string) string {
			if v, ok := x.Ratios[k]; ok {
				return benchcore.FmtRatio(v)
			}
			return "-"
		}
		row := []string{x.Workload, x.Cache, fmt.Sprint(x.N), x.Series, cell(d, "ack_ms", true), cell(c, "ack_ms", true), ratio("ack_ms")}
		if hasEnvoy {
			row = append(row, cell(d, "data_plane_ms", true), cell(c, "data_plane_ms", true), ratio("data_plane_ms"))
		}
		tapCPU := cell(c, "tap_cpu_ms", true)
		if _, has := c.Summary["tap_cpu_ms"]; !has {
			tapCPU = "in CP"
		}
		row = append(row, cell(d, "cp_cpu_ms", true), cell(c, "cp_cpu_ms", true), tapCPU)
		t.Add(row)
	}
	return t
}

func throughLine(t []string) string {
	if len(t) == 0 {
		return ""
	}
	return "; through: " + strings.Join(t, ", ")
}
