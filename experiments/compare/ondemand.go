package compare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/cite"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// The on-demand section: every name a run's client subscribed to because traffic asked
// for it (analysis.OnDemand, Figures.OnDemand), with its timeline from the data-plane
// request that asked. One table, built here for text, Markdown and HTML; a comparison of
// runs without on-demand subscribes has no such section (and no such finding).

// onDemandFindings are a step's on-demand findings, one per run that subscribed on
// demand or (SotW) NACKed a VHDS route configuration. Fetching on demand is what Envoy
// and the workbench's cache do, which incremental xDS allows (an implementation); that
// VHDS has no SotW variant is the protocol's, and Envoy's NACK is how Envoy enforces it.
func onDemandFindings(runs [2]*Run, step string, f [2]Figures, st [2]*analysis.Step) []Finding {
	var out []Finding
	for i, r := range runs {
		if od := f[i].OnDemand; od != nil {
			a := implementation(cite.EnvoyOnDemand, cite.OnDemandCache, cite.SpecIncremental)
			if slices.ContainsFunc(od.Fetches, func(x analysis.Fetch) bool { return x.Answer == analysis.FetchNotFound }) {
				a.srcs = append(a.srcs, cite.OnDemandNotFound)
			}
			a.sides[i] = a.srcs
			out = append(out, newFinding(step, "ondemand", words.Step(step)+": "+onDemandText(r, od), a))
		}
		if msg := vhdsNack(r, st[i]); msg != "" {
			out = append(out, newFinding(step, "ondemand",
				fmt.Sprintf("%s: %s cannot fetch virtual hosts on demand: Envoy NACKed the VHDS route configuration: %q",
					words.Step(step), r.Name(), msg), protocolVerdict(cite.SpecVHDSDeltaOnly, cite.EnvoyVHDSNack)))
		}
	}
	return out
}

// onDemandText is "B delta on-demand: Envoy fetched 2 of 100 virtual hosts and asked for
// 1 the server does not have (answered not found), and 1 of 100 clusters; held request to
// answer 4.5 ms median over 3 names". A name answered not found is not one of the k.
func onDemandText(r *Run, od *analysis.OnDemand) string {
	var parts []string
	for _, t := range xdslog.OnDemandTypes {
		if od.Subscribes[t] == 0 {
			continue
		}
		fetched, notFound := map[string]bool{}, map[string]bool{}
		for _, x := range od.Fetches {
			if x.Type != t {
				continue
			}
			if x.Answer == analysis.FetchNotFound {
				notFound[x.Name] = true
			} else {
				fetched[x.Name] = true
			}
		}
		what := map[string]string{"VHDS": "virtual host", "CDS": "cluster"}[t]
		s := words.Count(len(fetched), what)
		if n, ok := od.Available[t]; ok {
			s = fmt.Sprintf("%d of %s", len(fetched), words.Count(n, what))
		}
		if len(notFound) > 0 {
			s += fmt.Sprintf(" and asked for %d the server does not have (answered not found)", len(notFound))
		}
		parts = append(parts, s)
	}
	text := fmt.Sprintf("%s on-demand: %s fetched %s", r.Name(), clientWord(r), strings.Join(parts, ", and "))
	var answers []float64
	for _, x := range od.Fetches {
		if x.AnswerMS != nil {
			answers = append(answers, *x.AnswerMS)
		}
	}
	if len(answers) > 0 {
		// The upper middle, not stats.Median: with an even count it is one of the
		// answers, not the mean of the two middle ones. Kept as it was printed; using
		// stats.Median would change the text of a report with an even count.
		slices.Sort(answers)
		text += fmt.Sprintf("; held request to answer %.1f ms median over %s", answers[len(answers)/2], words.Count(len(answers), "name"))
	}
	return text
}

// clientWord is "Envoy" when the run's client was Envoy (run.json, else its data-plane
// events), else "the client".
func clientWord(r *Run) string {
	if clientName(r) == "Envoy" {
		return "Envoy"
	}
	return "the client"
}

// vhdsNack is the error of the step's NACK of a VHDS route configuration in a SotW run
// ("" when none): Envoy's own message names vhds.
func vhdsNack(r *Run, st *analysis.Step) string {
	if r.Mode != protocol.SotW || st == nil {
		return ""
	}
	for _, e := range st.NackErrors {
		if strings.Contains(strings.ToLower(e), "vhds") {
			return words.Clip(firstLine(e), 160)
		}
	}
	return ""
}
