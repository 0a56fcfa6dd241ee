package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/experiments/bench/benchcore"
	"github.com/xds-workbench/lab/experiments/chart"
)

// bench.svg's panels: two per workload (bytes, time), each panelW x panelH, drawn by the
// one chart kit (experiments/chart).
const (
	panelW = 470.0
	panelH = 340.0
)

// Panel is one chart panel: a metric against N, for one workload.
type Panel struct {
	ID       string
	Workload string
	Title    string
	Metric   string
	Unit     string
}

// proofTitle is what the data-plane time of each workload waits for.
var proofTitle = map[string]string{
	benchcore.WorkloadEndpoint:      "new endpoint answers",
	benchcore.WorkloadClusterAdd:    "new cluster's path answers",
	benchcore.WorkloadClusterRemove: "removed path gets 404",
	benchcore.WorkloadRoute:         "other backend answers",
	benchcore.WorkloadListener:      "new server header",
}

// Panels returns the two panels of one workload: bytes per change, and time to converge
// (the change seen through Envoy when every configuration of the workload has that
// figure, else the last ACK).
func (r *Report) Panels(workload string) [2]Panel {
	timeKey, timeTitle := "ack_ms", "publish → last ACK (ms)"
	has := false
	for _, c := range r.Configs {
		if c.Error != "" || c.Workload != workload {
			continue
		}
		if _, ok := c.Summary["data_plane_ms"]; !ok {
			has = false
			break
		}
		has = true
	}
	if has {
		timeKey, timeTitle = "data_plane_ms", "publish → "+proofTitle[workload]+" via Envoy (ms)"
	}
	change := workloadChange[workload]
	if change == "" {
		change = "change"
	}
	bytesTitle := "bytes sent per " + change
	if r.Options.Clients > 1 {
		bytesTitle = fmt.Sprintf("bytes sent to all %d clients per %s", r.Options.Clients, change)
		timeTitle = "publish → last client's ACK (ms)"
	}
	if r.Options.Envoys > 1 {
		bytesTitle = fmt.Sprintf("bytes sent to all %d Envoys per %s", r.Options.Envoys, change)
		if has {
			timeTitle = "publish → " + proofTitle[workload] + " via the last Envoy (ms)"
		}
	}
	return [2]Panel{
		{ID: workload + "-bytes", Workload: workload, Title: workload + ": " + bytesTitle, Metric: "bytes", Unit: "B"},
		{ID: workload + "-time", Workload: workload, Title: workload + ": " + timeTitle, Metric: timeKey, Unit: "ms"},
	}
}

// SeriesNames lists the series in report order.
func (r *Report) SeriesNames() []string {
	var out []string
	for _, c := range r.Configs {
		if !slices.Contains(out, c.Series) {
			out = append(out, c.Series)
		}
	}
	return out
}

// SeriesID is a series name as it appears in the SVG's ids ("sotw-per-type-linear").
func SeriesID(series string) string { return chart.SeriesID(series) }

// chartPanel is panel p as the chart kit draws it: a series per name, its medians with
// their spread and a tooltip each.
func (r *Report) chartPanel(p Panel, names []string) chart.Panel {
	cp := chart.Panel{ID: p.ID, Group: p.Workload, Title: p.Title, Unit: p.Unit}
	for _, s := range names {
		var pts []chart.Point
		for _, c := range r.Configs {
			if c.Workload != p.Workload || c.Series != s || c.Error != "" {
				continue
			}
			if st, ok := c.Summary[p.Metric]; ok && st.Median > 0 {
				tip := fmt.Sprintf("%s %s N=%d: median %s (min %s, max %s)", p.Workload, s, c.N, benchcore.Format(p.Unit, st.Median), benchcore.Format(p.Unit, st.Min), benchcore.Format(p.Unit, st.Max))
				pts = append(pts, chart.Point{N: c.N, Med: st.Median, Min: st.Min, Max: st.Max, Tip: tip})
			}
		}
		slices.SortFunc(pts, func(a, b chart.Point) int { return a.N - b.N })
		cp.Series = append(cp.Series, chart.Series{Name: s, Points: pts})
	}
	return cp
}

// SVG draws bench.svg: for each workload a row of two log-log panels, one line per
// series, with min–max whiskers.
func (r *Report) SVG() []byte {
	return r.grid("lab bench: bytes and time to converge against the number of clusters, per workload",
		func(w string) []Panel { p := r.Panels(w); return p[:] }, 2, panelW, panelH)
}

// BytesSVG draws one log-log panel per workload, side by side, each pw x ph: the bytes
// each series sent per change against N (the bytes panels of bench.svg in one row).
func (r *Report) BytesSVG(pw, ph float64) []byte {
	return r.grid("bytes sent per change against the number of clusters N",
		func(w string) []Panel { p := r.Panels(w); return p[:1] }, len(r.workloadsOrEndpoint()), pw, ph)
}

// grid draws the panels of each workload (panelsOf) with the chart kit, perRow a row.
func (r *Report) grid(title string, panelsOf func(workload string) []Panel, perRow int, pw, ph float64) []byte {
	workloads := r.workloadsOrEndpoint()
	names := r.SeriesNames()
	var panels []chart.Panel
	for _, w := range workloads {
		for _, p := range panelsOf(w) {
			panels = append(panels, r.chartPanel(p, names))
		}
	}
	title += " (" + strings.Join(workloads, ", ") + ")"
	return chart.Grid(title, panels, perRow, pw, ph, names, "median of the repeats; whiskers: min–max")
}

// workloadsOrEndpoint are the report's workloads, or the endpoint workload of a report
// without any (one written before the workload axis).
func (r *Report) workloadsOrEndpoint() []string {
	if w := r.workloads(); len(w) > 0 {
		return w
	}
	return []string{benchcore.WorkloadEndpoint}
}
