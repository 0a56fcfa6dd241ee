package compare

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/xds-workbench/lab/experiments/compare/internal/words"
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

// ClientWord names the sweep's client in a caption.
func (s *Scale) ClientWord() string {
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
			sizes = append(sizes, fmt.Sprintf("%s (%s)", words.Bytes(p.Bytes), c))
		}
	}
	if len(sizes) == 0 {
		return shown{}, false
	}
	at := fmt.Sprintf("a cluster add at N = %s (scale sweep): ", words.Int(n))
	return shown{sotw: at + fmt.Sprintf("%s clusters in CDS, %s in all", words.Int(cds), strings.Join(sizes, ", ")),
		delta: at + fmt.Sprintf("%s in CDS, %s in all", words.Count(d.CDS, "cluster"), words.Bytes(d.Bytes)),
		summary: fmt.Sprintf("a cluster add at N = %s: SotW sent %s clusters, delta %d (%s sweep)",
			words.Int(n), words.Int(cds), d.CDS, s.ClientWord())}, true
}

// Choosing is the decision guide's summary (docs/choosing.md) with this sweep's figures
// at its largest N: what a cluster add and an endpoint change cost each protocol under
// each cache ("" when the sweep lacks them).
func (s *Scale) Choosing() string {
	n := s.maxN(workloadClusterAdd)
	get := func(wl string, mode protocol.Mode, cache string) string {
		if p := s.point(wl, mode, cache, n); p != nil {
			return words.Bytes(p.Bytes)
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
		words.Int(n), get(workloadClusterAdd, protocol.SotW, cacheSnapshot), get(workloadClusterAdd, protocol.SotW, cacheLinear),
		get(workloadClusterAdd, protocol.Delta, cacheSnapshot), get("endpoint", protocol.SotW, cacheSnapshot), get("endpoint", protocol.SotW, cacheLinear),
		get("endpoint", protocol.Delta, cacheSnapshot))
}
