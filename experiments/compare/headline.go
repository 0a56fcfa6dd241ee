package compare

import (
	"fmt"
	"math"
	"strings"

	"github.com/xds-workbench/lab/experiments/cite"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
)

// Totals the headline and the total finding weigh.
const (
	metricBytes     = "bytes"
	metricResponses = "responses"
	metricNacks     = "nacks"
)

func metricOf(f Figures, metric string) int {
	switch metric {
	case metricBytes:
		return f.Bytes
	case metricResponses:
		return sumMap(f.Responses)
	case metricNacks:
		return f.Nacks
	}
	return 0
}

// explanation is the step that makes most of a total's difference and the finding that
// accounts for it.
type explanation struct {
	found  bool // a step differs (its name may be "", the events before the first step)
	step   string
	kind   string // the finding's kind ("" when no finding covers the step)
	values [2]int // A's and B's figure in that step
	attr   attribution
}

// explainKinds are the finding kinds that can account for a difference in a total, most
// specific first. For bytes and responses a NACK storm outweighs everything when the step
// had re-sends of rejected content, so "nack" is tried first there (see explain).
var explainKinds = map[string][]string{
	metricBytes:     {"redundant", "reconnect", "removal", "versions", "nack"},
	metricResponses: {"redundant", "reconnect", "removal", "versions", "nack"},
	metricNacks:     {"nack"},
}

// explain finds the compared step with the largest difference in metric (the first on a
// tie) and the finding of that step that explains it. A difference no finding covers is
// not attributed: it is stated with its figures, and no label is chosen for it.
func explain(fs []Finding, rows []Row, metric string) explanation {
	var ex explanation
	best := 0
	var stepRow Row
	for _, r := range rows {
		a, b := metricOf(r.Runs[0], metric), metricOf(r.Runs[1], metric)
		if d := abs(a - b); d > best {
			best, ex.found, ex.step, ex.values, stepRow = d, true, r.Step, [2]int{a, b}, r
		}
	}
	if !ex.found {
		return ex
	}
	kinds := explainKinds[metric]
	if metric != metricNacks && (stepRow.Runs[0].RejectedResends > 0 || stepRow.Runs[1].RejectedResends > 0) {
		kinds = append([]string{"nack"}, kinds...)
	}
	larger := stepRow.Runs[argMax(ex.values)]
	for _, k := range kinds {
		if !canExplain(k, larger) {
			continue
		}
		for _, f := range fs {
			if f.Step == ex.step && f.Kind == k {
				ex.kind, ex.attr = k, f.verdict
				return ex
			}
		}
	}
	ex.attr = unattributed(fmt.Sprintf("not attributed: no finding of %s explains its %s (%d vs %d)",
		words.Step(ex.step), metric, ex.values[0], ex.values[1]))
	return ex
}

// canExplain reports whether a finding of kind can account for the larger side of a
// difference, from that side's figures: re-sent content only where that side re-sent
// some, a NACK storm only where that side had NACKs. A SotW run's one redundant resource
// does not explain why the delta run sent more.
func canExplain(kind string, larger Figures) bool {
	switch kind {
	case "redundant":
		return larger.Redundant > 0
	case "nack":
		return larger.Nacks > 0 || larger.RejectedResends > 0
	case "removal":
		return larger.RemovedExplicit+larger.RemovedByAbsence > 0
	}
	return true
}

// headline picks, among the totals of bytes, responses and NACKs, the one whose A/B
// ratio is largest (a total that is 0 on one side only beats every ratio; on a tie the
// earlier of bytes, responses, NACKs wins), and says where the difference comes from.
func headline(runs [2]*Run, rep *Report) Headline {
	type candidate struct {
		metric, noun, verb string
	}
	var h Headline
	bestRatio := 1.0
	var chosen candidate
	for _, c := range []candidate{{metricBytes, "bytes", "sent"}, {metricResponses, "responses", "sent"}, {metricNacks, "NACKs", "got"}} {
		a, b := metricOf(rep.Total[0], c.metric), metricOf(rep.Total[1], c.metric)
		if a == b {
			continue
		}
		ratio := math.Inf(1)
		if lo := min(a, b); lo > 0 {
			ratio = float64(max(a, b)) / float64(lo)
		}
		if ratio > bestRatio {
			bestRatio, chosen, h.Metric, h.Values = ratio, c, c.metric, [2]int{a, b}
		}
	}
	if h.Metric == "" {
		h.Text = "No total differs: A and B sent the same bytes and responses and got the same NACKs over the compared steps."
		return h
	}
	shown := fmt.Sprintf("%s none", runs[argMin(h.Values)].Label)
	if !math.IsInf(bestRatio, 1) {
		r := bestRatio
		h.Ratio = &r
		shown = words.Ratio(max(h.Values[0], h.Values[1]), min(h.Values[0], h.Values[1])) + "×"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s differed most: %s %s %d, %s %d (%s).", capitalize(chosen.noun),
		runs[0].Name(), chosen.verb, h.Values[0], runs[1].Name(), h.Values[1], shown)
	ex := explain(rep.Findings, rep.Rows, h.Metric)
	if ex.found {
		h.Step = ex.step
		fmt.Fprintf(&b, " Most of the difference is in %s (%s %d, %s %d)", words.Step(ex.step), runs[0].Label, ex.values[0], runs[1].Label, ex.values[1])
		if ex.kind != "" {
			fmt.Fprintf(&b, ", explained by its %s finding", ex.kind)
		}
		b.WriteString(".")
	}
	// Cite what made the larger side larger: the other side's part of a finding's source
	// explains why it did not do the same, which the finding itself says.
	h.Attribution, h.Source = ex.attr.attr, ex.attr.source()
	if side := ex.attr.sides[argMax(ex.values)]; len(side) > 0 && ex.attr.attr == AttrImplementation {
		h.Source = cite.Join(side)
	}
	switch h.Attribution {
	case "":
	case AttrUnattributed:
		fmt.Fprintf(&b, " %s.", capitalize(strings.TrimSuffix(h.Source, ".")))
	default:
		fmt.Fprintf(&b, " That is the %s: %s.", h.Attribution, strings.TrimSuffix(h.Source, "."))
	}
	h.Text = b.String()
	return h
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func argMax(v [2]int) int { return 1 - argMin(v) }

func argMin(v [2]int) int {
	if v[1] < v[0] {
		return 1
	}
	return 0
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
