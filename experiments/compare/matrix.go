package compare

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/cite"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
	"github.com/xds-workbench/lab/shared/protocol"
)

// A Matrix puts two or more runs side by side, a column per run, and states the
// SotW-vs-delta differences across them. It does not count anything itself: the figures
// are each run's analysis.Summarize, and the findings are the two-run findings of every
// pair of a SotW and a delta run with the same cache (Compare), compared across pairs.
// A difference that every pair shows alike, with the SnapshotCache and with the
// LinearCache, is the protocol's when each pair says so; one that the cache (or another
// option) changes is an implementation's (attributeAcrossCaches). Like Report it is what
// the JSON format prints: add fields, never rename them.
type Matrix struct {
	// Runs are in command-line order, labelled A, B, C, ...
	Runs []MatrixRun `json:"runs"`
	// SharedSteps are the steps present in every run, in the first run's order.
	SharedSteps []string `json:"shared_steps"`
	Step        string   `json:"step,omitempty"`
	// Summary is the opening paragraph: the pairs and how the findings came out.
	Summary string `json:"summary"`
	// Pairs are the SotW/delta pairs with the same cache the findings compare.
	Pairs []Pair `json:"pairs"`
	// Coverage is "" when the pairs cover both caches, else why no finding can be
	// labelled ("only snapshot runs given").
	Coverage string             `json:"coverage,omitempty"`
	Rows     []MatrixRow        `json:"rows"`
	Versions []MatrixCheckpoint `json:"versions"`
	Total    []Figures          `json:"total"`
	Findings []MatrixFinding    `json:"findings"`
	// ProtocolDifferences and ConfigDifferences are as in Report, over every pair;
	// Scale is the scale sweep shown beside the runs.
	ProtocolDifferences []ProtocolDifference `json:"protocol_differences"`
	ConfigDifferences   []ConfigDifference   `json:"configuration_differences"`
	Scale               *Scale               `json:"scale,omitempty"`
	// Notes are what concerns one run (stale requests, anomalies) or the data planes'
	// answers, with the two-run report's attribution.
	Notes    []Finding `json:"notes"`
	Diagrams []Diagram `json:"diagrams"`
}

// MatrixRun is a run's header and the axes that name its column.
type MatrixRun struct {
	RunHeader
	// Axes names the run by what tells it apart from the others: mode and cache, and the
	// SotW options and the client where the runs given differ in them
	// ("sotw · snapshot · uniform", "delta · linear").
	Axes string `json:"axes"`
}

// Pair is a SotW run and a delta run served from the same cache.
type Pair struct {
	Name  string `json:"name"` // "A vs B"
	Sotw  string `json:"sotw"`
	Delta string `json:"delta"`
	Cache string `json:"cache"`
}

// MatrixRow is one step: a column group per run.
type MatrixRow struct {
	Step string    `json:"step"`
	Runs []Figures `json:"runs"`
}

// MatrixCheckpoint is every run's versions at the end of a step.
type MatrixCheckpoint struct {
	Step string       `json:"step"`
	Runs []VersionSet `json:"runs"`
}

// MatrixFinding is one SotW-vs-delta difference of one step across the pairs.
type MatrixFinding struct {
	Step string `json:"step"`
	// Kind is a two-run finding's kind: versions, redundant, nack, removal, reconnect.
	Kind string `json:"kind"`
	// Types are the types a redundant finding is about (each type is judged on its own:
	// the LDS/CDS full state is the protocol's, a whole RDS/EDS type the SnapshotCache's).
	Types []string `json:"types,omitempty"`
	Text  string   `json:"text"`
	// Attribution is protocol, implementation or unattributed.
	Attribution string `json:"attribution"`
	// Basis says how the pairs decided it: the same with both caches, the cache changes
	// it, another option does, or why it cannot be told.
	Basis string `json:"basis"`
	// Source is the protocol section or the implementations' code ("" when unattributed).
	Source string            `json:"source,omitempty"`
	Pairs  []PairObservation `json:"pairs"`
	srcs   []cite.Source
}

// PairObservation is what one pair shows of a matrix finding.
type PairObservation struct {
	Pair  string `json:"pair"`
	Cache string `json:"cache"`
	// Shape is what the pair shows without the figures that vary from run to run.
	Shape string `json:"shape"`
	// Finding is the pair's two-run finding ("" when the pair has none in the step), with
	// its attribution and source.
	Finding     string `json:"finding,omitempty"`
	Attribution string `json:"attribution,omitempty"`
	Source      string `json:"source,omitempty"`
}

// MaxRuns is how many runs a matrix takes: a run is named by one letter.
const MaxRuns = 26

// RunLabel is the label of the i-th run (0-based) on the command line: A, B, C, ...
func RunLabel(i int) string {
	if i < 0 || i >= MaxRuns {
		return fmt.Sprintf("R%d", i+1)
	}
	return string(rune('A' + i))
}

// runAxes are what a run was run with, as far as a matrix tells runs apart. A run
// without run.json has only its mode: its cache and options are unknown ("").
type runAxes struct {
	mode                            protocol.Mode
	cache, versions, policy, client string
}

func axesOf(r *Run) runAxes {
	a := runAxes{mode: r.Mode}
	if r.Meta == nil {
		return a
	}
	a.cache, a.client = runCache(r), r.Meta.Client
	if r.Mode == protocol.SotW {
		a.versions, a.policy = sotwStrategy(r), sotwPolicy(r)
	}
	return a
}

// axesTitles names each run by its mode and cache, plus each SotW option in which the
// SotW runs differ and the client when the runs differ in it: what the reader needs to
// tell the columns apart, and nothing they share.
func axesTitles(runs []*Run) []string {
	ax := make([]runAxes, len(runs))
	for i, r := range runs {
		ax[i] = axesOf(r)
	}
	varies := func(get func(runAxes) string, sotwOnly bool) bool {
		seen := map[string]bool{}
		for _, a := range ax {
			if !sotwOnly || a.mode == protocol.SotW {
				seen[get(a)] = true
			}
		}
		return len(seen) > 1
	}
	showVersions := varies(func(a runAxes) string { return a.versions }, true)
	showPolicy := varies(func(a runAxes) string { return a.policy }, true)
	showClient := varies(func(a runAxes) string { return a.client }, false)
	out := make([]string, len(runs))
	for i, a := range ax {
		parts := []string{a.mode.String()}
		switch {
		case a.cache == "":
			parts = append(parts, "no run.json")
		default:
			parts = append(parts, a.cache)
			if a.mode == protocol.SotW && showVersions {
				parts = append(parts, a.versions)
			}
			if a.mode == protocol.SotW && showPolicy {
				parts = append(parts, "nack "+a.policy)
			}
			if showClient && a.client != "" {
				parts = append(parts, a.client)
			}
		}
		out[i] = words.Sanitize(strings.Join(parts, " · "))
	}
	return out
}

// pairRef is a pair with its runs' axes, for attributeAcrossCaches.
type pairRef struct {
	Pair
	sotw, delta runAxes
}

// CompareMatrix computes the matrix of two or more runs (the CLI uses it for three or
// more; two runs get the two-run report, Compare).
func CompareMatrix(runs []*Run, opt Options) (*Matrix, error) {
	if len(runs) < 2 {
		return nil, fmt.Errorf("want two or more runs, got %d", len(runs))
	}
	if len(runs) > MaxRuns {
		return nil, fmt.Errorf("want at most %d runs, got %d", MaxRuns, len(runs))
	}
	for _, r := range runs {
		if r == nil || r.Summary == nil {
			return nil, errors.New("a run was not loaded")
		}
	}
	m := &Matrix{Step: opt.Step, SharedSteps: []string{}, Pairs: []Pair{}, Rows: []MatrixRow{}, Versions: []MatrixCheckpoint{},
		Findings: []MatrixFinding{}, Notes: []Finding{}, Diagrams: []Diagram{}}
	for _, s := range runSteps(runs[0]) {
		if !slices.ContainsFunc(runs[1:], func(r *Run) bool { return r.Summary.Step(s) == nil }) {
			m.SharedSteps = append(m.SharedSteps, s)
		}
	}
	titles := axesTitles(runs)
	for i, r := range runs {
		m.Runs = append(m.Runs, MatrixRun{RunHeader: header(r, runSteps(r), m.SharedSteps), Axes: titles[i]})
	}
	steps, err := selectSteps(m.SharedSteps, opt.Step, "every run")
	if err != nil {
		return nil, err
	}

	// The columns: each run's own figures and checkpoints.
	cols := runColumns(runs, steps)
	for i, s := range steps {
		m.Rows = append(m.Rows, MatrixRow{Step: s, Runs: cols.figures[i]})
		m.Versions = append(m.Versions, MatrixCheckpoint{Step: s, Runs: cols.versions[i]})
	}
	m.Total = cols.total
	m.Diagrams = append(m.Diagrams, cols.diagrams...)

	pairs, reports, err := sotwDeltaPairs(runs, opt)
	if err != nil {
		return nil, err
	}
	for _, p := range pairs {
		m.Pairs = append(m.Pairs, p.Pair)
	}
	m.Coverage = coverage(runs, pairs)
	unchecked := uncheckedAxes(runs, pairs)
	for _, s := range steps {
		m.Findings = append(m.Findings, crossFindings(s, pairs, reports, m.Coverage, unchecked)...)
	}
	m.Notes = matrixNotes(runs, steps, m.Rows)
	for i := range m.Notes {
		n := &m.Notes[i]
		n.verdict = n.verdict.checked()
		n.Attribution, n.Source = n.verdict.attr, n.verdict.source()
	}
	m.Summary = matrixSummary(m)
	m.Scale = opt.Scale
	m.ProtocolDifferences = protocolDifferences(matrixPairs(runs, pairs, steps), opt.Scale)
	var sf []sourcedFinding
	for _, f := range m.Findings {
		sf = append(sf, sourcedFinding{step: f.Step, attr: f.Attribution, srcs: f.srcs})
	}
	m.ConfigDifferences = configurationDifferences(sf)
	return m, nil
}

// matrixPairs are the matrix's SotW/delta pairs as runs.
func matrixPairs(runs []*Run, pairs []pairRef, steps []string) []diffPair {
	byLabel := map[string]*Run{}
	for _, r := range runs {
		byLabel[r.Label] = r
	}
	var out []diffPair
	for _, p := range pairs {
		out = append(out, diffPair{name: p.Name, sotw: byLabel[p.Sotw], delta: byLabel[p.Delta], steps: steps})
	}
	return out
}

// sotwDeltaPairs are the pairs of a SotW run and a delta run with the same cache, in the
// runs' order, and each pair's two-run report (whose findings the matrix compares).
func sotwDeltaPairs(runs []*Run, opt Options) ([]pairRef, []*Report, error) {
	var pairs []pairRef
	var reports []*Report
	for _, sr := range runs {
		for _, dr := range runs {
			sa, da := axesOf(sr), axesOf(dr)
			if sr.Mode != protocol.SotW || dr.Mode != protocol.Delta || sa.cache == "" || sa.cache != da.cache {
				continue
			}
			rep, err := Compare(sr, dr, opt)
			if err != nil {
				return nil, nil, fmt.Errorf("compare %s with %s: %w", sr.Label, dr.Label, err)
			}
			pairs = append(pairs, pairRef{Pair: Pair{Name: sr.Label + " vs " + dr.Label, Sotw: sr.Label, Delta: dr.Label, Cache: sa.cache}, sotw: sa, delta: da})
			reports = append(reports, rep)
		}
	}
	return pairs, reports, nil
}

// coverage is "" when the pairs cover both caches, else the one line that says why the
// findings cannot be labelled: a difference is the protocol's only if it holds with the
// SnapshotCache and with the LinearCache alike, so a matrix without one of them cannot
// tell, and says so rather than guessing.
func coverage(runs []*Run, pairs []pairRef) string {
	paired := map[string]bool{}
	for _, p := range pairs {
		paired[p.Cache] = true
	}
	if paired[cacheSnapshot] && paired[cacheLinear] {
		return ""
	}
	known := map[string]bool{}
	var unknown []string
	for _, r := range runs {
		if c := axesOf(r).cache; c != "" {
			known[c] = true
		} else {
			unknown = append(unknown, r.Label)
		}
	}
	var why string
	switch {
	case len(known) == 1 && known[cacheSnapshot]:
		why = "only snapshot runs given"
	case len(known) == 1 && known[cacheLinear]:
		why = "only linear runs given"
	case len(pairs) == 0:
		why = "no SotW run and delta run with the same cache given"
	case !paired[cacheLinear]:
		why = "no SotW and delta pair with the linear cache given"
	default:
		why = "no SotW and delta pair with the snapshot cache given"
	}
	if len(unknown) > 0 {
		why += fmt.Sprintf(" (the cache of %s is unknown: no run.json)", strings.Join(unknown, ", "))
	}
	return why
}

// uncheckedAxes is "" when every cache and client of the runs given is in a pair, else
// what no pair covers: a protocol verdict must hold under each cache and client the
// compare includes, and one that no pair ran was not seen to.
func uncheckedAxes(runs []*Run, pairs []pairRef) string {
	var missing []string
	for _, r := range runs {
		a := axesOf(r)
		if a.cache != "" && !slices.ContainsFunc(pairs, func(p pairRef) bool { return p.Cache == a.cache }) {
			missing = words.AppendNew(missing, fmt.Sprintf("the %s cache (%s)", a.cache, r.Label))
		}
		if a.client != "" && !slices.ContainsFunc(pairs, func(p pairRef) bool { return p.sotw.client == a.client || p.delta.client == a.client }) {
			missing = words.AppendNew(missing, fmt.Sprintf("%s (%s)", clientTitle(a.client), r.Label))
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "no SotW and delta pair ran with " + words.AndList(missing) + ", so it was not seen to hold there"
}

// kindTitles name a matrix finding's kind in its text.
var kindTitles = map[string]string{
	"versions":  "versions",
	"redundant": "redundant pushes",
	"nack":      "after a NACK",
	"removal":   "removal",
	"reconnect": "reconnect",
}

// crossFindings are a step's matrix findings: for each kind a pair can show (and, for
// redundant pushes, each type), what every pair shows, labelled across the pairs.
// Redundant types whose pairs show the same and come out the same are stated together.
func crossFindings(step string, pairs []pairRef, reports []*Report, cov, unchecked string) []MatrixFinding {
	type facetObs struct {
		obs  []pairFacet
		text []string // each pair's two-run finding text
	}
	var out []MatrixFinding
	for _, kind := range pairKinds {
		// The facet keys any pair has, in type order.
		var keys []string
		for _, rep := range reports {
			for _, f := range rep.Findings {
				if f.Step != step || f.Kind != kind {
					continue
				}
				for _, fc := range f.facets {
					if !slices.Contains(keys, fc.key) {
						keys = append(keys, fc.key)
					}
				}
			}
		}
		sortTypes(keys)
		// Facets (types) whose pairs show the same and that come out the same are one
		// finding: "LDS, CDS" rather than one finding per type.
		merged := map[string]int{} // shapes and verdict -> index in out
		for _, key := range keys {
			var fo facetObs
			for i, rep := range reports {
				o := pairFacet{pair: pairs[i], shape: noneShape(kind)}
				text := ""
				for _, f := range rep.Findings {
					if f.Step != step || f.Kind != kind {
						continue
					}
					for _, fc := range f.facets {
						if fc.key == key {
							o.present, o.shape, o.attr, text = true, fc.shape, fc.attr, f.Text
						}
					}
				}
				fo.obs = append(fo.obs, o)
				fo.text = append(fo.text, text)
			}
			v := attributeAcrossCaches(fo.obs, cov, unchecked)
			sig := []string{v.attr, v.basis, cite.Join(v.srcs)}
			for _, o := range fo.obs {
				sig = append(sig, o.shape)
			}
			signature := strings.Join(sig, "\x00")
			if i, ok := merged[signature]; ok {
				out[i].Types = append(out[i].Types, key)
				continue
			}
			merged[signature] = len(out)
			mf := MatrixFinding{Step: step, Kind: kind, Attribution: v.attr, Basis: v.basis, Source: cite.Join(v.srcs), srcs: v.srcs}
			if key != "" {
				mf.Types = []string{key}
			}
			for i, o := range fo.obs {
				po := PairObservation{Pair: o.pair.Name, Cache: o.pair.Cache, Shape: o.shape, Finding: fo.text[i]}
				if o.present {
					po.Attribution, po.Source = o.attr.attr, o.attr.source()
				}
				mf.Pairs = append(mf.Pairs, po)
			}
			out = append(out, mf)
		}
	}
	for i := range out {
		f := &out[i]
		types := strings.Join(f.Types, ", ")
		for j := range f.Pairs {
			f.Pairs[j].Shape = strings.ReplaceAll(f.Pairs[j].Shape, typesMark, types)
		}
		f.Text = crossText(f)
	}
	return out
}

// sortTypes orders facet keys as analysis.Types, others after them by name.
func sortTypes(keys []string) {
	slices.SortStableFunc(keys, func(a, b string) int {
		ia, ib := slices.Index(analysis.Types, a), slices.Index(analysis.Types, b)
		switch {
		case ia >= 0 && ib >= 0:
			return ia - ib
		case ia >= 0:
			return -1
		case ib >= 0:
			return 1
		}
		return strings.Compare(a, b)
	})
}

// crossText is "port-change, redundant pushes. A vs B (snapshot): ... C vs D (linear):
// ...": the pairs grouped by what they show.
func crossText(f *MatrixFinding) string {
	var order []string
	groups := map[string][]string{}
	for _, p := range f.Pairs {
		if _, ok := groups[p.Shape]; !ok {
			order = append(order, p.Shape)
		}
		groups[p.Shape] = append(groups[p.Shape], p.Pair+" ("+p.Cache+")")
	}
	parts := []string{words.Step(f.Step) + ", " + kindTitles[f.Kind]}
	if len(order) == 1 && len(f.Pairs) > 1 {
		parts = append(parts, "Every pair, "+strings.Join(groups[order[0]], ", ")+": "+order[0])
	} else {
		for _, s := range order {
			parts = append(parts, strings.Join(groups[s], ", ")+": "+s)
		}
	}
	return strings.Join(parts, ". ")
}

// matrixNotes are what concerns one run in a step (stale requests, anomalies: the
// two-run report's per-run findings) and the steps where the data planes answered
// differently.
func matrixNotes(runs []*Run, steps []string, rows []MatrixRow) []Finding {
	out := []Finding{}
	for k, s := range steps {
		row := rows[k]
		for _, r := range runs {
			d := details(r)[s]
			if d == nil {
				continue
			}
			if x, ok := staleFinding(r, s, d); ok {
				out = append(out, x)
			}
		}
		differ := false
		for _, f := range row.Runs[1:] {
			differ = differ || !sameAnswer(row.Runs[0].DataPlane, f.DataPlane)
		}
		if differ {
			var parts []string
			for i, r := range runs {
				parts = append(parts, r.Name()+" "+dpOrNone(row.Runs[i].DataPlane))
			}
			out = append(out, newFinding(s, "dataplane", words.Step(s)+": the data planes answered differently: "+strings.Join(parts, "; "),
				implementation(cite.DataPlane)))
		}
		for i, r := range runs {
			if x, ok := anomalyFinding(r, s, row.Runs[i]); ok {
				out = append(out, x)
			}
		}
	}
	return out
}

func matrixSummary(m *Matrix) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d runs over %s.", len(m.Runs), words.Count(len(m.SharedSteps), "shared step"))
	if len(m.Pairs) == 0 {
		b.WriteString(" No SotW run and delta run share a known cache, so no finding compares the protocols; the tables show each run.")
		return b.String()
	}
	var names []string
	for _, p := range m.Pairs {
		names = append(names, p.Name+" ("+p.Cache+")")
	}
	fmt.Fprintf(&b, " SotW and delta pairs with the same cache: %s.", strings.Join(names, ", "))
	if m.Coverage != "" {
		fmt.Fprintf(&b, " Whether a difference is the protocol's or an implementation's cannot be decided: %s; a difference is the protocol's only if it holds with the SnapshotCache and with the LinearCache alike.", m.Coverage)
		return b.String()
	}
	n := map[string]int{}
	for _, f := range m.Findings {
		n[f.Attribution]++
	}
	fmt.Fprintf(&b, " Of %s, %d %s the protocol (the same with both caches), %d an implementation (the cache or another option changes it, or both caches' servers chose it), %d unattributed.",
		words.Count(len(m.Findings), "finding"), n[AttrProtocol], isAre(n[AttrProtocol]), n[AttrImplementation], n[AttrUnattributed])
	return b.String()
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}
