package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/experiments/chart"
	"github.com/xds-workbench/lab/shared/protocol"
)

// workloadClusterAdd is bench's cluster-add workload, the change whose CDS response
// shows SotW's full state growing with N.
const workloadClusterAdd = "cluster-add"

// Scale is the scale sweep a report shows beside the runs (lab compare --scale, or
// scale.json in a folder of runs): `lab bench` figures of one change against the number
// of clusters N, per workload and series. The teaching runs have one resource per type,
// so what grows with N (SotW re-sending a whole type) shows only here.
type Scale struct {
	Path string `json:"path"`
	// Client is the bench's client ("sim" for the simulated client); Simulated says the
	// figures were not Envoy's.
	Client    string       `json:"client"`
	Simulated bool         `json:"simulated"`
	Points    []ScalePoint `json:"points"`
}

// ScalePoint is one configuration's median change: bytes (with the repeats' spread) and
// resources sent, and the resources of the full-state type the change touched (CDS for a
// cluster add).
type ScalePoint struct {
	Workload  string        `json:"workload"`
	Series    string        `json:"series"`
	Cache     string        `json:"cache"`
	Mode      protocol.Mode `json:"mode"`
	N         int           `json:"clusters"`
	Bytes     float64       `json:"bytes"`
	BytesMin  float64       `json:"bytes_min"`
	BytesMax  float64       `json:"bytes_max"`
	Resources float64       `json:"resources"`
	// CDS is the CDS resources of the first change (0 when it sent none).
	CDS int `json:"cds_resources"`
}

// scaleFile is what a Scale needs of a bench.json (bench.Report's JSON, which compare
// does not import: bench's tests import compare). bench's TestScaleReadsBenchJSON keeps
// the two in step.
type scaleFile struct {
	Options struct {
		Client string `json:"client"`
	} `json:"options"`
	Configs []struct {
		Series   string        `json:"series"`
		Cache    string        `json:"cache"`
		Workload string        `json:"workload"`
		Mode     protocol.Mode `json:"mode"`
		N        int           `json:"clusters"`
		Error    string        `json:"error"`
		Summary  map[string]struct {
			Median, Min, Max float64
		} `json:"summary"`
		Updates []struct {
			ByType map[string]struct {
				Resources int `json:"resources"`
			} `json:"by_type"`
		} `json:"updates"`
	} `json:"configs"`
}

// LoadScale reads a bench.json (or the scale.json copy of one).
func LoadScale(path string) (*Scale, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scale: %w", err)
	}
	var f scaleFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("scale %s: %w", path, err)
	}
	s := &Scale{Path: path, Client: f.Options.Client, Simulated: f.Options.Client != "envoy"}
	for _, c := range f.Configs {
		if c.Error != "" {
			continue
		}
		// Reports from before the cache and workload axes measured the snapshot cache and
		// the endpoint change (as bench.ReadReport reads them).
		p := ScalePoint{Workload: orDefault(c.Workload, "endpoint"), Series: c.Series, Cache: orDefault(c.Cache, cacheSnapshot),
			Mode: c.Mode, N: c.N, Bytes: c.Summary["bytes"].Median, BytesMin: c.Summary["bytes"].Min,
			BytesMax: c.Summary["bytes"].Max, Resources: c.Summary["resources"].Median}
		if len(c.Updates) > 0 {
			p.CDS = c.Updates[0].ByType["CDS"].Resources
		}
		s.Points = append(s.Points, p)
	}
	if len(s.Points) == 0 {
		return nil, fmt.Errorf("scale %s: no configuration finished", path)
	}
	return s, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// point finds the configuration of workload, mode and cache at N (nil when absent).
func (s *Scale) point(workload string, mode protocol.Mode, cache string, n int) *ScalePoint {
	for i, p := range s.Points {
		if p.Workload == workload && p.Mode == mode && p.Cache == cache && p.N == n {
			return &s.Points[i]
		}
	}
	return nil
}

// maxN is the largest N of workload in the sweep.
func (s *Scale) maxN(workload string) int {
	n := 0
	for _, p := range s.Points {
		if p.Workload == workload {
			n = max(n, p.N)
		}
	}
	return n
}

// clientWord names the sweep's client in a caption.
func (s *Scale) clientWord() string {
	if s.Simulated {
		return "simulated client"
	}
	return "Envoy"
}

// changeAtScale is the cluster add at the sweep's largest N, for the "change" row: what
// SotW sent under each cache against delta, in CDS resources and bytes.
func (s *Scale) changeAtScale() (shown, bool) {
	n := s.maxN(workloadClusterAdd)
	d := s.point(workloadClusterAdd, protocol.Delta, cacheSnapshot, n)
	if n == 0 || d == nil {
		return shown{}, false
	}
	var cds int
	var sizes []string
	for _, c := range []string{cacheSnapshot, cacheLinear} {
		if p := s.point(workloadClusterAdd, protocol.SotW, c, n); p != nil {
			cds = p.CDS
			sizes = append(sizes, fmt.Sprintf("%s (%s)", bytesText(p.Bytes), c))
		}
	}
	if len(sizes) == 0 {
		return shown{}, false
	}
	at := fmt.Sprintf("a cluster add at N = %s (scale sweep): ", fmtInt(n))
	return shown{sotw: at + fmt.Sprintf("%s clusters in CDS, %s in all", fmtInt(cds), strings.Join(sizes, ", ")),
		delta: at + fmt.Sprintf("%s in CDS, %s in all", count(d.CDS, "cluster"), bytesText(d.Bytes)),
		summary: fmt.Sprintf("a cluster add at N = %s: SotW sent %s clusters, delta %d (%s sweep)",
			fmtInt(n), fmtInt(cds), d.CDS, s.clientWord())}, true
}

// chart is the bytes-per-change chart, inline in HTML: one log-log panel per workload,
// a line per series, drawn by the chart kit without its XML declaration.
func (s *Scale) chart() template.HTML {
	var panels []chart.Panel
	for _, wl := range s.workloads() {
		p := chart.Panel{ID: wl + "-bytes", Group: wl, Title: wl + ": " + bytesTitle(wl), Unit: "B"}
		for _, name := range s.series() {
			var pts []chart.Point
			for _, pt := range s.Points {
				if pt.Workload == wl && pt.Series == name && pt.Bytes > 0 {
					pts = append(pts, chart.Point{N: pt.N, Med: pt.Bytes, Min: pt.BytesMin, Max: pt.BytesMax,
						Tip: fmt.Sprintf("%s %s N=%d: median %s", wl, name, pt.N, bytesText(pt.Bytes))})
				}
			}
			slices.SortFunc(pts, func(a, b chart.Point) int { return a.N - b.N })
			p.Series = append(p.Series, chart.Series{Name: name, Points: pts})
		}
		panels = append(panels, p)
	}
	b := chart.Grid("bytes sent per change against the number of clusters N", panels, len(panels), 470, 120, s.series(),
		"median of the repeats; whiskers: min–max")
	if i := bytes.Index(b, []byte("<svg")); i > 0 {
		b = b[i:]
	}
	// Drawn from numbers and XML-escaped names: safe to inline as is.
	return template.HTML(b)
}

// bytesTitle is a workload's panel title.
func bytesTitle(workload string) string {
	switch workload {
	case "endpoint":
		return "bytes sent per endpoint change"
	case "cluster-add":
		return "bytes sent per cluster added"
	}
	return "bytes sent per change"
}

// workloads are the sweep's workloads in report order.
func (s *Scale) workloads() []string {
	var out []string
	for _, p := range s.Points {
		if !slices.Contains(out, p.Workload) {
			out = append(out, p.Workload)
		}
	}
	return out
}

// series are the sweep's series in report order.
func (s *Scale) series() []string {
	var out []string
	for _, p := range s.Points {
		if !slices.Contains(out, p.Series) {
			out = append(out, p.Series)
		}
	}
	return out
}

// bytesText is 1234567 as "1.2 MB", 2345 as "2.3 kB", 512 as "512 B".
func bytesText(b float64) string {
	switch {
	case b >= 1e6:
		return fmt.Sprintf("%.1f MB", b/1e6)
	case b >= 1e3:
		return fmt.Sprintf("%.1f kB", b/1e3)
	}
	return fmt.Sprintf("%.0f B", b)
}

// fmtInt is 1001 as "1,001".
func fmtInt(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// choosing is the decision guide's summary (docs/choosing.md) with this sweep's figures
// at its largest N: what a cluster add and an endpoint change cost each protocol under
// each cache ("" when the sweep lacks them).
func (s *Scale) choosing() string {
	n := s.maxN(workloadClusterAdd)
	get := func(wl string, mode protocol.Mode, cache string) string {
		if p := s.point(wl, mode, cache, n); p != nil {
			return bytesText(p.Bytes)
		}
		return "-"
	}
	if n == 0 || s.point("endpoint", protocol.Delta, cacheSnapshot, n) == nil {
		return ""
	}
	return fmt.Sprintf("Choosing (docs/choosing.md): at N = %s in this sweep a cluster add cost SotW %s (SnapshotCache) or %s "+
		"(LinearCache) against delta's %s, the protocol's full-state CDS; an endpoint change cost SotW %s or %s against delta's "+
		"%s, the SnapshotCache's whole-type EDS. Delta pays where clusters or listeners change often at large N; the "+
		"LinearCache alone removes SotW's endpoint cost; on-demand loading needs delta; proxyless grpc-go speaks SotW only.",
		fmtInt(n), get(workloadClusterAdd, protocol.SotW, cacheSnapshot), get(workloadClusterAdd, protocol.SotW, cacheLinear),
		get(workloadClusterAdd, protocol.Delta, cacheSnapshot), get("endpoint", protocol.SotW, cacheSnapshot), get("endpoint", protocol.SotW, cacheLinear),
		get("endpoint", protocol.Delta, cacheSnapshot))
}
