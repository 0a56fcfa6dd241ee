package compare

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/experiments/cite"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
	"github.com/xds-workbench/lab/shared/protocol"
)

// Every finding says whose behaviour it shows: the xDS protocol's (what any conforming
// server and client would do, because the protocol document says so) or an
// implementation's (what go-control-plane v0.14.0, the workbench's own front end or the
// client chose to do). Where nothing the report knows explains a difference, it is not
// attributed: no label is the default. Every source is an entry of package cite, the
// one registry, and a protocol verdict needs a protocol section there (settle).
const (
	AttrProtocol       = "protocol"
	AttrImplementation = "implementation"
	// AttrUnattributed is the label of a difference nothing explains, or one the runs
	// given cannot tell the protocol from the implementation on (see
	// attributeAcrossCaches).
	AttrUnattributed = "unattributed"
)

// The library caches a run can serve from (run.json "cache").
const (
	cacheSnapshot = "snapshot"
	cacheLinear   = "linear"
)

// Causes of a redundant resource, in the order their sources are listed.
const (
	causeFullState = iota // protocol: an LDS/CDS response carries the whole type
	causeWholeType        // SnapshotCache sends every RDS/EDS resource of the type
	causeNewStream        // SnapshotCache answers a new stream with everything
	causeUniform          // uniform labels move unchanged types
	causeLabel            // a label moved over content the client already runs
	causeDeltaSent        // the delta server took rejected content as delivered
	numCauses
)

// causeSource is where a cause of redundancy is written, for the run's cache. With the
// LinearCache an RDS/EDS resource or a moved label the client already runs is sent
// because the cache compares with what it returned (rejected content counts), and a new
// stream gets everything because its subscription starts empty; uniform labels cannot
// occur there (refused), so their source stays the snapshot one.
func causeSource(cause int, linear bool) cite.Source {
	snapshot := [numCauses]cite.Source{cite.SpecGrouping, cite.SnapshotWholeType, cite.SnapshotNewStream, cite.UniformLabels,
		cite.SnapshotLabelNotContent, cite.DeltaSent}
	if linear {
		switch cause {
		case causeWholeType, causeLabel:
			return cite.LinearReturned
		case causeNewStream:
			return cite.LinearNewStream
		}
	}
	return snapshot[cause]
}

// attribution is a finding's verdict and the sources it rests on. Sides holds the
// sources that concern each run (none when a source is about both), so that the
// headline can cite the run that makes the difference. Why says, for an unattributed
// verdict, why no label was given.
type attribution struct {
	attr  string
	srcs  []cite.Source
	sides [2][]cite.Source
	why   string
}

// source is the sources as the reports print them; for an unattributed verdict, why,
// then the rule it concerns when there is one.
func (a attribution) source() string {
	switch {
	case a.why == "":
		return cite.Join(a.srcs)
	case len(a.srcs) == 0:
		return a.why
	}
	return a.why + ": " + cite.Join(a.srcs)
}

// protocolVerdict is the protocol's verdict, resting on srcs (a protocol section first,
// then how the components carry it out).
func protocolVerdict(srcs ...cite.Source) attribution {
	return attribution{attr: AttrProtocol, srcs: srcs}
}

// unattributed is the verdict where nothing the report knows explains a difference.
func unattributed(why string) attribution {
	return attribution{attr: AttrUnattributed, why: why}
}

// settle is the one rule every verdict passes before a report states it: the protocol
// only where a protocol section of the registry says so and the two runs speak
// different protocols (two runs of one protocol cannot differ by it); an implementation
// only with its sources. Anything else is not attributed, with the reason.
func (a attribution) settle(runs [2]*Run) attribution {
	if a.attr == AttrProtocol && runs[0].Mode == runs[1].Mode {
		u := unattributed(fmt.Sprintf("not attributed: both runs speak %s, so a difference between them is not the "+
			"protocol's; %s; the rule at play", runs[0].Mode, runsDiffer(runs)))
		u.srcs = a.srcs
		return u
	}
	return a.checked()
}

// runsDiffer says what two runs of one protocol were run with differently, which may
// make a difference between them: "they differ in the cache (snapshot, linear)", or
// that nothing recorded tells them apart.
func runsDiffer(runs [2]*Run) string {
	if runs[0].Meta == nil || runs[1].Meta == nil {
		return "what the runs were run with is not recorded (no run.json), so what made it cannot be told"
	}
	a, b := axesOf(runs[0]), axesOf(runs[1])
	var parts []string
	for _, d := range []struct{ name, x, y string }{
		{"the cache", a.cache, b.cache}, {"--sotw-versions", a.versions, b.versions},
		{"--nack-policy", a.policy, b.policy}, {"the client", a.client, b.client},
	} {
		if d.x != d.y {
			parts = append(parts, fmt.Sprintf("%s (%s, %s)", d.name, words.OrDash(d.x), words.OrDash(d.y)))
		}
	}
	if len(parts) == 0 {
		return "nothing recorded tells the runs apart (timing, or the scenario)"
	}
	return "they differ in " + words.AndList(parts) + ", which may make it"
}

// checked is the verdict when its sources can carry it, else unattributed with why.
func (a attribution) checked() attribution {
	switch {
	case a.attr == AttrProtocol && checkSources(a.srcs, true) != nil:
		return unattributed("not attributed: " + checkSources(a.srcs, true).Error())
	case a.attr == AttrImplementation && checkSources(a.srcs, false) != nil:
		return unattributed("not attributed: " + checkSources(a.srcs, false).Error())
	}
	return a
}

// errNoSpec is a protocol verdict without a protocol section among its sources.
var errNoSpec = errors.New("a protocol verdict cites no section of the xDS protocol document")

// checkSources says whether srcs can carry a verdict: each cites something real
// (cite.Source.Check), there is at least one, and a protocol verdict has a section.
func checkSources(srcs []cite.Source, protocol bool) error {
	if len(srcs) == 0 {
		return errors.New("no source")
	}
	for _, s := range srcs {
		if err := s.Check(); err != nil {
			return err
		}
	}
	if protocol && !cite.HasProtocol(srcs) {
		return errNoSpec
	}
	return nil
}

// sources collects the implementation sources a finding rests on, per run (-1: both).
type sources struct {
	impl  []cite.Source
	sides [2][]cite.Source
}

func (s *sources) add(run int, src cite.Source) {
	if !slices.Contains(s.impl, src) {
		s.impl = append(s.impl, src)
	}
	if run >= 0 && !slices.Contains(s.sides[run], src) {
		s.sides[run] = append(s.sides[run], src)
	}
}

// verdict is implementation with the collected sources, or unattributed when there are
// none: no source, no label.
func (s *sources) verdict() attribution {
	if len(s.impl) == 0 {
		return unattributed("not attributed: no component recorded for it")
	}
	return attribution{attr: AttrImplementation, srcs: s.impl, sides: s.sides}
}

// sotwStrategy is the run's --sotw-versions ("uniform" when run.json does not say: the
// workbench's default).
func sotwStrategy(r *Run) string {
	if r.Meta != nil && r.Meta.SotwVersions != "" {
		return r.Meta.SotwVersions
	}
	return "uniform"
}

// sotwPolicy is the run's --nack-policy ("resend", the default, when unknown).
func sotwPolicy(r *Run) string {
	if r.Meta != nil && r.Meta.NackPolicy != "" {
		return r.Meta.NackPolicy
	}
	return "resend"
}

// runCache is the run's --cache: "snapshot" when run.json does not say (runs older than
// the option used the SnapshotCache, and so does a run without run.json, as with the
// other options' defaults).
func runCache(r *Run) string {
	if r.Meta != nil && r.Meta.Cache != "" {
		return r.Meta.Cache
	}
	return cacheSnapshot
}

func isLinear(r *Run) bool { return runCache(r) == cacheLinear }

// attributeVersions: which versions move is the servers' labelling, never the protocol's
// (a SotW version_info and a delta resource version are both opaque strings).
func attributeVersions(runs [2]*Run) attribution {
	var s sources
	for i, r := range runs {
		switch {
		case r.Mode == protocol.Delta && isLinear(r):
			s.add(i, cite.LinearDeltaVersions)
		case r.Mode == protocol.Delta:
			s.add(i, cite.DeltaVersions)
		case isLinear(r):
			s.add(i, cite.LinearSotwVersions)
		case sotwStrategy(r) == "per-type":
			s.add(i, cite.PerTypeLabels)
		default:
			s.add(i, cite.UniformLabels)
		}
	}
	return s.verdict()
}

// attributeRedundant names why each run re-sent content its client already ran, of one
// type (typ "" for every type). Only the LDS/CDS full-state rule is the protocol's;
// everything else is a choice.
func attributeRedundant(runs [2]*Run, d [2]*detail, typ string) attribution {
	var s sources
	fullState := false // some run re-sent under the LDS/CDS full-state rule
	for i, x := range d {
		// Sources in cause order (never map order: the report must be the same every
		// time), each cause counted over the types asked for.
		for c := range numCauses {
			n := 0
			for t, causes := range x.causes {
				if typ == "" || t == typ {
					n += causes[c]
				}
			}
			switch {
			case n == 0:
			case c == causeFullState:
				fullState = true
			default:
				s.add(i, causeSource(c, isLinear(runs[i])))
			}
		}
	}
	if len(s.impl) == 0 && fullState {
		return protocolVerdict(cite.SpecGrouping)
	}
	if len(s.impl) == 0 {
		// Counted redundant by the figures but not replayed here (a condensed storm
		// summary): the re-send of rejected content, by the SnapshotCache answering a
		// NACK, is the one way a run condenses; any other run is not attributed.
		for i, r := range runs {
			if r.Mode == protocol.SotW && !isLinear(r) && sotwPolicy(r) == "resend" {
				s.add(i, cite.SnapshotNack)
			}
		}
	}
	return s.verdict()
}

// attributeNack: a NACK itself is the protocol's, but every NACK finding states what the
// server did next. The protocol says only that a server should send when the resources
// changed (xDS protocol, "When to send an update"); what each server did is its own.
func attributeNack(runs [2]*Run, f [2]Figures) attribution {
	var s sources
	for i, r := range runs {
		if f[i].Nacks == 0 && f[i].RejectedResends == 0 {
			continue
		}
		switch {
		case r.Mode == protocol.Delta:
			s.add(i, cite.DeltaSent)
		case isLinear(r) && f[i].RejectedResends == 0:
			s.add(i, cite.LinearNack)
		case isLinear(r):
			s.add(i, cite.LinearReturned)
		case f[i].RejectedResends == 0 && sotwPolicy(r) == "hold":
			s.add(i, cite.HoldPolicy)
		default:
			s.add(i, cite.SnapshotNack)
		}
		if r.Mode == protocol.SotW && f[i].RejectedResends >= 2 { // a loop, not one re-send
			s.add(i, cite.EnvoyRateLimit)
		}
	}
	return s.verdict()
}

// attributeReconnect: a client that declared nothing gets everything (protocol); what a
// server does with declared state (SotW version_info, delta initial_resource_versions)
// is its own choice.
func attributeReconnect(runs [2]*Run, d [2]*detail) attribution {
	declared := false
	for _, x := range d {
		if x.re != nil && (x.re.InitialVersions > 0 || len(x.re.Resume) > 0) {
			declared = true
		}
	}
	if !declared {
		return protocolVerdict(cite.SpecOverview)
	}
	var s sources
	for i, r := range runs {
		re := d[i].re
		if re == nil {
			continue
		}
		switch {
		case r.Mode == protocol.Delta && isLinear(r):
			s.add(i, cite.LinearDeltaInitial)
		case r.Mode == protocol.Delta:
			s.add(i, cite.DeltaInitial)
		case re.Resources > 0 && isLinear(r):
			s.add(i, cite.LinearNewStream)
		case re.Resources > 0:
			s.add(i, cite.SnapshotNewStream)
		}
	}
	return s.verdict()
}

// attributeAnomaly: an unanswered send lost with its stream is the protocol's nonce
// scoping; feedback naming a nonce never sent is not protocol behaviour.
func attributeAnomaly(f Figures) attribution {
	if f.Unmatched > 0 {
		return attribution{attr: AttrImplementation, srcs: []cite.Source{cite.Unmatched}}
	}
	return protocolVerdict(cite.SpecNonce)
}

// pairFacet is what one SotW/delta pair shows of a matrix finding: present when the
// pair's two-run report has the finding (its shape and attribution), else the kind's
// none-shape.
type pairFacet struct {
	pair    pairRef
	present bool
	shape   string
	attr    attribution
}

// crossVerdict is a matrix finding's label, how the pairs decided it, and its sources.
type crossVerdict struct {
	attr, basis string
	srcs        []cite.Source
}

// attributeAcrossCaches labels one SotW-vs-delta difference across the pairs of a
// matrix. The rule: a difference is the protocol's only when every pair shows it alike,
// with the SnapshotCache and with the LinearCache, each pair's own attribution says
// protocol, and no cache or client of the runs given went unpaired (unchecked: then it
// was not seen to hold there); alike but attributed to an implementation in the pairs,
// it is the servers' (not the cache's); when pairs show it differently, what tells those
// pairs apart changes it: the cache alone (implementation, naming both caches' code), a
// SotW option or the client with the same cache, or several at once (all implementation
// choices). It cannot be decided when the pairs do not cover both caches (cov, from
// coverage), when a pair's own report could not attribute it, or when two pairs run with
// the same options disagree (timing, not a choice). Pairs are compared on their shapes
// (facet), never on figures that vary from run to run.
func attributeAcrossCaches(obs []pairFacet, cov, unchecked string) crossVerdict {
	if cov != "" {
		return crossVerdict{attr: AttrUnattributed, basis: cov}
	}
	for _, o := range obs {
		if o.present && o.attr.attr == AttrUnattributed {
			return crossVerdict{attr: AttrUnattributed, basis: o.pair.Name + "'s own report could not attribute it (" + o.attr.why + ")"}
		}
	}
	impl, allProtocol := implementationSources(obs)
	if !slices.ContainsFunc(obs, func(o pairFacet) bool { return o.shape != obs[0].shape }) {
		return alikeVerdict(obs, allProtocol, impl, unchecked)
	}
	cs := comparePairs(obs)
	if len(cs.noise) > 0 {
		c := cs.noise[0]
		return crossVerdict{attr: AttrUnattributed, basis: fmt.Sprintf("%s and %s were run with the same options and still differ "+
			"(timing), so whose behaviour it is cannot be told", c.a.pair.Name, c.b.pair.Name)}
	}
	basis, cache := cs.basis()
	var src []cite.Source
	if cache {
		src = append(src, cite.CacheAxis)
		for _, o := range obs {
			if o.pair.Cache == cacheSnapshot && (o.pair.sotw.versions == "uniform" || o.pair.sotw.policy == "resend") {
				src = append(src, cite.SnapshotOnlyOptions)
				break
			}
		}
	}
	for _, s := range impl {
		if !slices.Contains(src, s) {
			src = append(src, s)
		}
	}
	return crossVerdict{attr: AttrImplementation, basis: basis, srcs: src}
}

// pairsByCache names the pairs by cache and the clients they ran: "the SnapshotCache
// (A vs B, C vs B) and the LinearCache (D vs E), with Envoy".
func pairsByCache(list []pairFacet) string {
	var parts []string
	for _, c := range []struct{ cache, name string }{{cacheSnapshot, "SnapshotCache"}, {cacheLinear, "LinearCache"}} {
		var names []string
		for _, o := range list {
			if o.pair.Cache == c.cache {
				names = append(names, o.pair.Name)
			}
		}
		if len(names) > 0 {
			parts = append(parts, fmt.Sprintf("the %s (%s)", c.name, strings.Join(names, ", ")))
		}
	}
	var clients []string
	for _, o := range list {
		for _, c := range []string{o.pair.sotw.client, o.pair.delta.client} {
			if n := clientTitle(c); n != "" && !slices.Contains(clients, n) {
				clients = append(clients, n)
			}
		}
	}
	out := words.AndList(parts)
	if len(clients) > 0 {
		out += ", with " + words.AndList(clients)
	}
	return out
}

// clientTitle is a run.json client as a reader knows it ("" when unknown).
func clientTitle(kind string) string {
	switch kind {
	case "":
		return ""
	case "envoy":
		return "Envoy"
	case "grpc":
		return "grpc-go"
	case "simulated":
		return "the simulated client"
	}
	return kind
}

// implementationSources are the sources, once each, of the pairs that show the
// difference and attribute it to an implementation; allProtocol is true when there are
// none.
func implementationSources(obs []pairFacet) (impl []cite.Source, allProtocol bool) {
	allProtocol = true
	for _, o := range obs {
		if !o.present || o.attr.attr == AttrProtocol {
			continue
		}
		allProtocol = false
		for _, s := range o.attr.srcs {
			if !slices.Contains(impl, s) {
				impl = append(impl, s)
			}
		}
	}
	return impl, allProtocol
}

// alikeVerdict is the verdict when every pair shows the difference alike: the protocol's
// when every pair says so (with the first present pair's sources) and no cache or client
// went unchecked, else the servers'.
func alikeVerdict(obs []pairFacet, allProtocol bool, impl []cite.Source, unchecked string) crossVerdict {
	basis := "the same in every pair, with " + pairsByCache(obs)
	if allProtocol && unchecked != "" {
		return crossVerdict{attr: AttrUnattributed, basis: basis + ", but " + unchecked}
	}
	if allProtocol {
		var src []cite.Source
		for _, o := range obs {
			if o.present {
				src = o.attr.srcs
				break
			}
		}
		return crossVerdict{attr: AttrProtocol, basis: basis, srcs: src}
	}
	return crossVerdict{attr: AttrImplementation, basis: basis + ", so not the cache's: the servers' choice either way", srcs: impl}
}

// pairComparison is two pairs and what they were run with differently (differingAxes).
type pairComparison struct {
	a, b pairFacet
	axes []string
}

// text names both pairs with their caches: "A vs B (snapshot) and C vs D (linear)".
func (c pairComparison) text() string {
	return fmt.Sprintf("%s (%s) and %s (%s)", c.a.pair.Name, c.a.pair.Cache, c.b.pair.Name, c.b.pair.Cache)
}

// pairComparisons sorts every two pairs by what tells them apart: noise, pairs run
// alike that differ; cacheOnly, options and several, pairs that differ in the cache
// alone, in options or the client with the same cache, or in the cache and more;
// agreeOnCache, pairs that differ in the cache alone and agree.
type pairComparisons struct {
	noise, cacheOnly, options, several, agreeOnCache []pairComparison
}

// comparePairs compares every two of obs.
func comparePairs(obs []pairFacet) pairComparisons {
	var cs pairComparisons
	for i := range obs {
		for j := i + 1; j < len(obs); j++ {
			c := pairComparison{obs[i], obs[j], differingAxes(obs[i].pair, obs[j].pair)}
			switch {
			case obs[i].shape == obs[j].shape:
				if slices.Equal(c.axes, []string{"the cache"}) {
					cs.agreeOnCache = append(cs.agreeOnCache, c)
				}
			case len(c.axes) == 0:
				cs.noise = append(cs.noise, c)
			case slices.Equal(c.axes, []string{"the cache"}):
				cs.cacheOnly = append(cs.cacheOnly, c)
			case !slices.Contains(c.axes, "the cache"):
				cs.options = append(cs.options, c)
			default:
				cs.several = append(cs.several, c)
			}
		}
	}
	return cs
}

// basis says what changes a difference the pairs show differently (there is no noise),
// and whether the cache is among it.
func (cs pairComparisons) basis() (basis string, cache bool) {
	switch {
	case len(cs.cacheOnly) > 0:
		return "the cache changes it: " + cs.cacheOnly[0].text() + " differ in the cache alone", true
	case len(cs.options) > 0:
		o := cs.options[0]
		verb := "change"
		if len(o.axes) == 1 {
			verb = "changes"
		}
		basis = fmt.Sprintf("%s %s it with the same cache: %s differ", words.AndList(o.axes), verb, o.text())
		if len(cs.agreeOnCache) > 0 {
			basis += "; the cache does not: " + cs.agreeOnCache[0].text() + " agree"
		}
		return basis, false
	}
	c := cs.several[0]
	return fmt.Sprintf("%s differ between %s, and either may change it; all are implementation choices",
		words.AndList(c.axes), c.text()), true
}

// differingAxes names what two pairs were run with differently: the cache, a SotW
// option of their SotW runs, or the client of either run.
func differingAxes(a, b pairRef) []string {
	var out []string
	if a.Cache != b.Cache {
		out = append(out, "the cache")
	}
	if a.sotw.versions != b.sotw.versions {
		out = append(out, "--sotw-versions")
	}
	if a.sotw.policy != b.sotw.policy {
		out = append(out, "--nack-policy")
	}
	if a.sotw.client != b.sotw.client || a.delta.client != b.delta.client {
		out = append(out, "the client")
	}
	return out
}
