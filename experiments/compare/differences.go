package compare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/cite"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// The answer a reader came for: what differs between SotW and delta because the
// protocol says so, computed from these runs (and the scale sweep when there is one),
// each row with the section that makes it so and the caches and clients it was seen
// under; and, apart, what this configuration adds, each naming the option or component
// that causes it. Nothing here is hand-written: a row whose evidence the runs lack says
// so.

// ProtocolDifference is one property in which SotW and delta differ by the protocol.
type ProtocolDifference struct {
	// Key names the property for programs: change, removal, reconnect, ack, versions,
	// on-demand.
	Key string `json:"key"`
	// Property is the property in words ("What one change sends").
	Property string `json:"property"`
	// SotW and Delta are what each did in these runs: the step and its figures;
	// Summary is both in one short line (a terminal's).
	SotW    string `json:"sotw"`
	Delta   string `json:"delta"`
	Summary string `json:"summary"`
	// Source is the protocol section that makes it so (package cite).
	Source string `json:"source"`
	// ObservedWith names the SotW/delta pairs, with their caches and clients, that
	// showed it ("A vs B (snapshot, Envoy)"); "" when the runs do not exercise it.
	ObservedWith string `json:"observed_with,omitempty"`
	src          cite.Source
}

// ConfigDifference is one thing this configuration adds to what the protocols differ
// in: an option of the workbench or a component's choice, with where it showed.
type ConfigDifference struct {
	// Who is the option or component ("--sotw-versions uniform", "go-control-plane
	// SnapshotCache"); Kind is whose it is (cite.Kind).
	Who  string `json:"who"`
	Kind string `json:"kind"`
	// What is what it does, and Where the file and function.
	What  string `json:"what"`
	Where string `json:"where"`
	// Steps are the steps whose findings it explains, and Findings how many.
	Steps    []string `json:"steps"`
	Findings int      `json:"findings"`
	src      cite.Source
}

// diffPair is one SotW run and one delta run compared.
type diffPair struct {
	name        string
	sotw, delta *Run
	steps       []string
}

// under is the pair's cache and client: "snapshot, Envoy" ("" when unknown).
func (p diffPair) under() string {
	var parts []string
	switch {
	case p.sotw.Meta == nil || p.delta.Meta == nil:
	case runCache(p.sotw) == runCache(p.delta):
		parts = append(parts, runCache(p.sotw))
	default:
		parts = append(parts, runCache(p.sotw)+"/"+runCache(p.delta))
	}
	if c := clientName(p.sotw); c != "client" {
		parts = append(parts, c)
	}
	return strings.Join(parts, ", ")
}

// observedText groups pairs by what they ran under: "A vs B, C vs B (snapshot,
// Envoy); D vs E (linear, Envoy)".
func observedText(pairs []diffPair) string {
	var order []string
	names := map[string][]string{}
	for _, p := range pairs {
		u := p.under()
		if _, ok := names[u]; !ok {
			order = append(order, u)
		}
		names[u] = append(names[u], p.name)
	}
	var parts []string
	for _, u := range order {
		part := strings.Join(names[u], ", ")
		if u != "" {
			part += " (" + u + ")"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

// property is one row's rule: its key, words and section, and how a pair shows it
// (ok false when the pair's steps do not exercise it).
type property struct {
	key, words string
	src        cite.Source
	show       func(p diffPair) (shown, bool)
	// absent is what the row says when no pair exercises it, in full and in short.
	absent, absentShort string
}

// shown is what a pair shows of a property: each protocol's text, both in one line, and
// a shape that pairs showing it alike share.
type shown struct {
	sotw, delta, summary, shape string
}

var properties = []property{
	{"change", "What one change sends", cite.SpecGrouping, showChange,
		"LDS and CDS responses carry every resource of the type in SotW, one changed resource in delta; with one resource per type the runs cannot show it (the scale chart does)",
		"SotW re-sends every LDS/CDS resource, delta the changed one (not visible with one per type)"},
	{"removal", "How a removal is said", cite.SpecDeleting, showRemoval, "no step of these runs removes a resource", "not in these runs"},
	{"reconnect", "What a reconnect presents", cite.SpecReconnect, showReconnect, "no step of these runs reconnects with state", "not in these runs"},
	{"ack", "What an ACK carries", cite.SpecSotwNames, showAck, "no ACK in these runs", "not in these runs"},
	{"versions", "What a version names", cite.SpecVersionScope, showVersions, "no ACK in these runs", "not in these runs"},
	{"on-demand", "On-demand loading", cite.SpecVHDSDeltaOnly, showOnDemand,
		"not exercised in these runs: VHDS has no SotW variant, so only delta can fetch virtual hosts on demand",
		"delta only: VHDS has no SotW variant (not in these runs)"},
}

// protocolDifferences are the properties, each shown by the first pair that exercises
// it and observed with every pair that shows it alike. No pair: none (two runs of one
// protocol do not differ by it).
func protocolDifferences(pairs []diffPair, scale *Scale) []ProtocolDifference {
	out := []ProtocolDifference{}
	if len(pairs) == 0 {
		return out
	}
	for _, pr := range properties {
		d := ProtocolDifference{Key: pr.key, Property: pr.words, Source: pr.src.String(), src: pr.src}
		first := ""
		var alike []diffPair
		for _, p := range pairs {
			sh, ok := pr.show(p)
			if !ok {
				continue
			}
			if first == "" {
				first, d.SotW, d.Delta, d.Summary = sh.shape, sh.sotw, sh.delta, sh.summary
			}
			if sh.shape == first {
				alike = append(alike, p)
			}
		}
		var seen []string
		if len(alike) > 0 {
			seen = append(seen, observedText(alike))
		}
		if first == "" {
			d.SotW, d.Summary = pr.absent, pr.absentShort // about both protocols: Delta stays empty
		}
		if pr.key == "change" && scale != nil {
			if sh, ok := scale.changeAtScale(); ok {
				d.SotW, d.Delta = joinEvidence(first != "", d.SotW, sh.sotw), joinEvidence(first != "", d.Delta, sh.delta)
				d.Summary = sh.summary
				seen = append(seen, "the scale sweep ("+scale.ClientWord()+")")
			}
		}
		d.ObservedWith = strings.Join(seen, "; ")
		out = append(out, d)
	}
	return out
}

// joinEvidence adds the scale sweep's evidence to a row's, or puts it in place of the
// row's "not in these runs" text.
func joinEvidence(fromRuns bool, runs, scale string) string {
	if !fromRuns {
		return scale
	}
	return runs + "; " + scale
}

// stepsWith are p's steps for which both runs' details satisfy ok, in order.
func stepsWith(p diffPair, ok func(s, d *detail) bool) []string {
	ds, dd := details(p.sotw), details(p.delta)
	var out []string
	for _, st := range p.steps {
		if s, d := ds[st], dd[st]; s != nil && d != nil && ok(s, d) {
			out = append(out, st)
		}
	}
	return out
}

// showChange: a step in which a full-state type (LDS, CDS) changed: SotW sent every
// resource of the type, delta the changed ones.
func showChange(p diffPair) (shown, bool) {
	for _, st := range p.steps {
		for _, typ := range []string{"CDS", "LDS"} {
			s, d := stepTypeFigures(p.sotw, st, typ), stepTypeFigures(p.delta, st, typ)
			if s == nil || d == nil || s.Resources <= d.Resources || d.Resources == 0 {
				continue
			}
			return shown{sotw: fmt.Sprintf("%s: %s in its %s responses (every %s it has)", words.Step(st), words.Count(s.Resources, "resource"), typ, typ),
				delta:   fmt.Sprintf("%s: %s, the changed ones", words.Step(st), words.Count(d.Resources, typ+" resource")),
				summary: fmt.Sprintf("%s: SotW sent %d %s resources, delta %d", words.Step(st), s.Resources, typ, d.Resources), shape: typ}, true
		}
	}
	return shown{}, false
}

// stepTypeFigures are run r's figures of type typ in step st (nil when it sent none).
func stepTypeFigures(r *Run, st, typ string) *analysis.TypeFigures {
	s := r.Summary.Step(st)
	if s == nil {
		return nil
	}
	if f, ok := s.Types[typ]; ok && f != nil && f.Responses > 0 {
		return f
	}
	return nil
}

// showRemoval: the first step in which the SotW run removed by absence and the delta
// run explicitly.
func showRemoval(p diffPair) (shown, bool) {
	st := stepsWith(p, func(s, d *detail) bool { return len(s.absence) > 0 && len(d.explicit) > 0 })
	if len(st) == 0 {
		return shown{}, false
	}
	s, d := details(p.sotw)[st[0]], details(p.delta)[st[0]]
	at, dt := strings.Join(namedTypes(s.absence), ", "), strings.Join(namedTypes(d.explicit), ", ")
	return shown{
		sotw: words.Step(st[0]) + ": " + strings.TrimPrefix(removalText(p.sotw, s), p.sotw.Name()+" ") +
			"; RDS and EDS have no removal: a parent stops naming them",
		delta:   words.Step(st[0]) + ": " + strings.TrimPrefix(removalText(p.delta, d), p.delta.Name()+" ") + " in removed_resources",
		summary: fmt.Sprintf("SotW leaves the name out of the next %s response; delta lists it in removed_resources (%s)", at, dt),
		shape:   at + "/" + dt}, true
}

// namedTypes are the types of m with names, in display order.
func namedTypes(m map[string][]string) []string {
	var out []string
	for _, t := range analysis.Types {
		if len(m[t]) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// showReconnect: the first step in which both clients reconnected declaring state.
func showReconnect(p diffPair) (shown, bool) {
	st := stepsWith(p, func(s, d *detail) bool {
		return s.re != nil && d.re != nil && len(s.re.Resume) > 0 && d.re.InitialVersions > 0
	})
	if len(st) == 0 {
		return shown{}, false
	}
	s, d := details(p.sotw)[st[0]].re, details(p.delta)[st[0]].re
	return shown{
		sotw: fmt.Sprintf("%s: each type's first request carried version_info %s and its names; the version names the type, "+
			"not what the client holds of it", words.Step(st[0]), strings.Join(s.Resume, ", ")),
		delta: fmt.Sprintf("%s: %d initial_resource_versions entries, one version per resource the client holds",
			words.Step(st[0]), d.InitialVersions),
		summary: fmt.Sprintf("SotW presents a version per type (%s); delta one per resource (%d initial_resource_versions)",
			strings.Join(s.Resume, ", "), d.InitialVersions),
		shape: "resume/initial"}, true
}

// showAck: SotW ACKs repeat the type's names; delta ACKs carry the nonce alone.
func showAck(p diffPair) (shown, bool) {
	names, acks := subscribedNames(p.sotw), p.sotw.Summary.Total.Acks
	if acks == 0 || p.delta.Summary.Total.Acks == 0 {
		return shown{}, false
	}
	var parts []string
	for _, t := range analysis.Types {
		if n, ok := names[t]; ok {
			parts = append(parts, fmt.Sprintf("%s %d", t, n))
		}
	}
	sotw := fmt.Sprintf("%s, each repeating every name subscribed of its type (most at once: %s; wildcard LDS/CDS: none)",
		words.Count(acks, "ACK"), words.OrDash(strings.Join(parts, ", ")))
	delta := fmt.Sprintf("%s, each the nonce alone: names change only by subscribe and unsubscribe", words.Count(p.delta.Summary.Total.Acks, "ACK"))
	return shown{sotw: sotw, delta: delta, shape: "names/nonce",
		summary: "a SotW ACK repeats every subscribed name of its type; a delta ACK carries the nonce alone"}, true
}

// subscribedNames is, per type, the most names a SotW request of the run carried.
func subscribedNames(r *Run) map[string]int {
	out := map[string]int{}
	for _, e := range r.Events {
		if e.Event == xdslog.EventRequest && len(e.Names) > out[e.Type] {
			out[e.Type] = len(e.Names)
		}
	}
	return out
}

// showVersions: the last version each run's client accepted, per type (SotW) or per
// resource (delta).
func showVersions(p diffPair) (shown, bool) {
	sv, dv := lastAccepted(p.sotw), lastSentResourceVersions(p.delta)
	if len(sv) == 0 || len(dv) == 0 {
		return shown{}, false
	}
	return shown{sotw: "one version_info per type, whatever changed in it: " + strings.Join(sv, ", "),
		delta:   "one version per resource, its content hash: " + strings.Join(dv, ", "),
		summary: "SotW versions a whole type; delta versions each resource",
		shape:   "type/resource"}, true
}

// lastAccepted is "LDS 6" for each type the run's client ACKed, in display order.
func lastAccepted(r *Run) []string {
	last := map[string]string{}
	for _, e := range r.Events {
		if e.Event == xdslog.EventAck && e.AcceptedVersion != nil {
			last[e.Type] = *e.AcceptedVersion
		}
	}
	var out []string
	for _, t := range analysis.Types {
		if v, ok := last[t]; ok {
			out = append(out, t+" "+words.Clip(v, 12))
		}
	}
	return out
}

// lastSentResourceVersions is "inventory 8cd26284…" for up to three resources the run
// sent, with how many more.
func lastSentResourceVersions(r *Run) []string {
	last := map[string]string{}
	var order []string
	for _, e := range r.Events {
		if e.Event != xdslog.EventSend {
			continue
		}
		for _, res := range e.Resources {
			if _, ok := last[res.Name]; !ok {
				order = append(order, res.Name)
			}
			last[res.Name] = res.Version
		}
	}
	var out []string
	for i, n := range order {
		if i == 3 {
			out = append(out, fmt.Sprintf("%d more", len(order)-3))
			break
		}
		out = append(out, n+" "+words.Clip(last[n], 8))
	}
	return out
}

// showOnDemand: a delta run that fetched on demand, against what its SotW partner could
// do.
func showOnDemand(p diffPair) (shown, bool) {
	for _, st := range p.steps {
		s := p.delta.Summary.Step(st)
		if s == nil || s.OnDemand == nil || len(s.OnDemand.Fetches) == 0 {
			continue
		}
		return shown{sotw: "cannot: VHDS has no SotW method, and Envoy NACKs a VHDS route configuration over SotW ADS",
			delta:   fmt.Sprintf("%s: %s", words.Step(st), strings.TrimPrefix(onDemandText(p.delta, s.OnDemand), p.delta.Name()+" on-demand: ")),
			summary: fmt.Sprintf("delta fetched %s on demand; SotW has no VHDS", words.Count(len(s.OnDemand.Fetches), "name")),
			shape:   "on-demand"}, true
	}
	return shown{}, false
}

// configurationDifferences are the implementation sources of the findings, once each,
// with the steps they explain: what this configuration adds to the protocols'
// differences. Protocol sources are left out (they are the rows above).
func configurationDifferences(fs []sourcedFinding) []ConfigDifference {
	out := []ConfigDifference{}
	index := map[cite.Source]int{}
	for _, f := range fs {
		if f.attr != AttrImplementation {
			continue
		}
		for _, s := range f.srcs {
			if s.Kind == cite.Protocol {
				continue
			}
			i, ok := index[s]
			if !ok {
				i = len(out)
				index[s] = i
				out = append(out, ConfigDifference{Who: s.Who, Kind: string(s.Kind), What: s.Says,
					Where: strings.TrimSuffix(s.File+", "+s.Func, ", "), Steps: []string{}, src: s})
			}
			out[i].Findings++
			if st := words.Step(f.step); f.step != "" && !slices.Contains(out[i].Steps, st) {
				out[i].Steps = append(out[i].Steps, st)
			}
		}
	}
	// The workbench's own options first (a reader chose them), then the components.
	order := map[string]int{string(cite.Workbench): 0, string(cite.GoControlPlane): 1, string(cite.Envoy): 2, string(cite.GRPCGo): 3}
	slices.SortStableFunc(out, func(a, b ConfigDifference) int { return order[a.Kind] - order[b.Kind] })
	return out
}

// sourcedFinding is what configurationDifferences needs of a finding, two-run or matrix.
type sourcedFinding struct {
	step, attr string
	srcs       []cite.Source
}
