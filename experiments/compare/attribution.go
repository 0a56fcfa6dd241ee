package compare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/shared/xdslog"
)

// Every finding says whose behaviour it shows: the xDS protocol's (what any conforming
// server and client would do) or an implementation's (what go-control-plane v0.14.0, the
// workbench's own front end or the client chose to do where the protocol leaves room).
// The sources below were checked against Envoy's docs/root/api-docs/xds_protocol.rst (the
// section titles are that file's headings), go-control-plane v0.14.0 and Envoy's
// source/extensions/config_subscription/grpc/grpc_mux_impl.cc; each names where to look.
const (
	AttrProtocol       = "protocol"
	AttrImplementation = "implementation"
	// AttrUnattributed is a matrix finding's label when the runs given cannot tell the
	// protocol from the implementation (see attributeAcrossCaches).
	AttrUnattributed = "unattributed"
)

// The library caches a run can serve from (run.json "cache").
const (
	cacheSnapshot = "snapshot"
	cacheLinear   = "linear"
)

// Protocol sources: sections of the xDS protocol document.
const (
	srcSpecGrouping = "xDS protocol: Grouping Resources into Responses (only LDS and CDS responses must " +
		"carry every resource of their type)"
	srcSpecDeleting = "xDS protocol: Deleting Resources (SotW: an LDS or CDS name absent from the next " +
		"response; delta: removed_resources)"
	srcSpecOverview = "xDS protocol: Basic Protocol Overview (a client that declares no version is sent " +
		"every subscribed resource)"
	srcSpecNonce = "xDS protocol: Basic Protocol Overview (a nonce does not survive its stream: a send in " +
		"flight when the stream closed is never answered)"
	srcSpecResourceNames = "xDS protocol: Incremental xDS, Resource names (a delta response names each " +
		"resource it carries)"
	srcSpecAckNack = "xDS protocol: ACK/NACK and resource type instance version (a version per type in " +
		"SotW; a NACK carries error_detail and the previous good version)"
)

// Implementation sources: the component, where it is, and what it does.
const (
	srcUniformLabels = "--sotw-versions uniform (shared/frontend, Publisher.Publish) moves every type's " +
		"version_info on each publish, and go-control-plane SnapshotCache (pkg/cache/v3/simple.go, " +
		"respondSOTWWatches) answers every version change"
	srcPerTypeLabels = "--sotw-versions per-type (shared/frontend, Publisher.Publish) moves a type's label " +
		"when its content changes, counting from labels kept in the server's memory"
	srcLabelNotContent = "go-control-plane SnapshotCache (pkg/cache/v3/simple.go, respondSOTWWatches) " +
		"compares version labels, not content"
	srcSnapshotWholeType = "go-control-plane SnapshotCache (pkg/cache/v3/simple.go, createResponse) sends " +
		"every resource of the type, changed or not (its LinearCache sends only the changed RDS/EDS ones)"
	srcSnapshotNewStream = "go-control-plane SnapshotCache (pkg/cache/v3/simple.go, CreateWatch) answers " +
		"every new stream with everything, though the protocol lets a server skip what the client has " +
		"(ACK/NACK and resource type instance version)"
	srcSnapshotNack = "go-control-plane SnapshotCache (pkg/cache/v3/simple.go, CreateWatch) answers a NACK's " +
		"version_info, the previous good version, at once with the current snapshot"
	srcRateLimit = "Envoy's ads_config.rate_limit_settings would throttle the loop (unset in " +
		"bootstrap/sotw.yaml)"
	srcHold = "--nack-policy hold (sotw/sotw.go, onRequest) shows the SnapshotCache the rejected version, " +
		"which parks the watch until the next publish"
	srcDeltaSent = "go-control-plane delta server (pkg/server/delta/v3/server.go, processDelta) records " +
		"versions when it sends and never reads error_detail"
	srcDeltaInitial = "go-control-plane delta server (pkg/server/delta/v3/server.go, processDelta) seeds the " +
		"subscription from initial_resource_versions and the SnapshotCache (pkg/cache/v3/delta.go, " +
		"createDeltaResponse) sends only what differs"
	srcDeltaVersions = "go-control-plane snapshot cache (pkg/cache/v3/snapshot.go, ConstructVersionMap) " +
		"versions a delta resource by the SHA-256 of its bytes"
	srcStaleDropped = "go-control-plane SotW server (pkg/server/sotw/v3/ads.go, processADS) skips a request " +
		"whose nonce is stale, subscription change and all; the protocol only says not to answer it " +
		"(xDS protocol: Resource updates)"
	srcDataPlane = "the clients: each answer is what that client had applied when the runner asked; the " +
		"protocol does not say when a client applies a response"
	srcUnmatched = "the client: it answered a nonce the server never sent on that stream (recorded as " +
		"unmatched, never guessed to be an ACK)"
)

// Implementation sources of a run served from the LinearCaches (--cache linear: one
// go-control-plane LinearCache per type behind a MuxCache). The SnapshotCache sources
// above would name the wrong code there: the same transports, but another cache decides
// what is sent.
const (
	srcLinearReturned = "go-control-plane LinearCache (pkg/cache/v3/linear.go, computeResourceChange) sends a " +
		"resource whose version differs from the one it returned on the stream, which after a NACK is the " +
		"rejected one, not what the client runs"
	srcLinearNewStream = "go-control-plane LinearCache (pkg/cache/v3/linear.go, CreateWatch) answers a new stream " +
		"with every subscribed resource: the SotW server starts each stream's subscription with nothing returned " +
		"(pkg/server/sotw/v3/ads.go, processADS), and a version_info without the cache's prefix is answered in full"
	srcLinearNack = "go-control-plane LinearCache (pkg/cache/v3/linear.go, computeResourceChange) compares with what " +
		"it returned on the stream, the rejected response, so a NACK changes nothing and nothing is re-sent until " +
		"the next publish"
	srcLinearSotwVersions = "go-control-plane LinearCache (pkg/cache/v3/linear.go) labels a type's SotW responses " +
		"with its own counter, moved by each update of that type, behind a prefix per start of the control plane " +
		"(shared/frontend, LinearPublisher)"
	srcLinearDeltaVersions = "go-control-plane LinearCache (pkg/cache/v3/cached_resource.go, getResourceVersion) " +
		"versions a delta resource by the SHA-256 of its bytes"
	srcLinearDeltaInitial = "go-control-plane delta server (pkg/server/delta/v3/server.go, processDelta) seeds the " +
		"subscription from initial_resource_versions and the LinearCache (pkg/cache/v3/linear.go, " +
		"computeResourceChange) sends only the resources whose hash differs"
)

// Sources of the cache axis, for a matrix finding that the cache changes.
const (
	srcCacheAxis = "go-control-plane v0.14.0: the SnapshotCache (pkg/cache/v3/simple.go, createResponse and " +
		"respondSOTWWatches) answers from the whole snapshot of a type whenever its version moves; the LinearCache " +
		"(pkg/cache/v3/linear.go, computeResponse) from what changed against what it returned on the stream: LDS " +
		"and CDS in full, RDS and EDS only the changed resources"
	srcSnapshotOnlyOptions = "--sotw-versions uniform and --nack-policy resend need the SnapshotCache " +
		"(experiments/controlplane, CheckCacheOptions)"
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
func causeSource(cause int, linear bool) string {
	snapshot := [numCauses]string{srcSpecGrouping, srcSnapshotWholeType, srcSnapshotNewStream, srcUniformLabels, srcLabelNotContent, srcDeltaSent}
	if linear {
		switch cause {
		case causeWholeType, causeLabel:
			return srcLinearReturned
		case causeNewStream:
			return srcLinearNewStream
		}
	}
	return snapshot[cause]
}

// attribution is a finding's verdict and where it comes from. Sides holds the part of
// Source that concerns each run ("" when the source is about both), so that the headline
// can cite the run that makes the difference.
type attribution struct {
	attr, source string
	sides        [2]string
}

// sources collects the implementation sources a finding rests on, per run (-1: both).
type sources struct {
	impl  []string
	sides [2][]string
}

func (s *sources) add(run int, src string) {
	if src == "" {
		return
	}
	if !slices.Contains(s.impl, src) {
		s.impl = append(s.impl, src)
	}
	if run >= 0 && !slices.Contains(s.sides[run], src) {
		s.sides[run] = append(s.sides[run], src)
	}
}

// verdict is implementation with the collected sources, or protocol with fallback when
// there are none.
func (s *sources) verdict(fallback string) attribution {
	if len(s.impl) == 0 {
		return attribution{attr: AttrProtocol, source: fallback}
	}
	return attribution{attr: AttrImplementation, source: strings.Join(s.impl, "; "),
		sides: [2]string{strings.Join(s.sides[0], "; "), strings.Join(s.sides[1], "; ")}}
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
		case r.Mode == xdslog.ModeDelta && isLinear(r):
			s.add(i, srcLinearDeltaVersions)
		case r.Mode == xdslog.ModeDelta:
			s.add(i, srcDeltaVersions)
		case isLinear(r):
			s.add(i, srcLinearSotwVersions)
		case sotwStrategy(r) == "per-type":
			s.add(i, srcPerTypeLabels)
		default:
			s.add(i, srcUniformLabels)
		}
	}
	return s.verdict(srcSpecAckNack)
}

// attributeRedundant names why each run re-sent content its client already ran, of one
// type (typ "" for every type). Only the LDS/CDS full-state rule is the protocol's;
// everything else is a choice.
func attributeRedundant(runs [2]*Run, d [2]*detail, typ string) attribution {
	var s sources
	protocol := false
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
				protocol = true
			default:
				s.add(i, causeSource(c, isLinear(runs[i])))
			}
		}
	}
	if len(s.impl) == 0 && !protocol {
		// Counted redundant by the figures but not replayed here (a condensed storm
		// summary): the re-send of rejected content is the SnapshotCache's.
		s.add(-1, srcSnapshotNack)
	}
	return s.verdict(srcSpecGrouping)
}

// attributeNack: a NACK itself is the protocol's, but every NACK finding states what the
// server did next, which the protocol leaves to the server.
func attributeNack(runs [2]*Run, f [2]Figures) attribution {
	var s sources
	for i, r := range runs {
		if f[i].Nacks == 0 && f[i].RejectedResends == 0 {
			continue
		}
		switch {
		case r.Mode == xdslog.ModeDelta:
			s.add(i, srcDeltaSent)
		case isLinear(r) && f[i].RejectedResends == 0:
			s.add(i, srcLinearNack)
		case isLinear(r):
			s.add(i, srcLinearReturned)
		case f[i].RejectedResends == 0 && sotwPolicy(r) == "hold":
			s.add(i, srcHold)
		default:
			s.add(i, srcSnapshotNack)
		}
		if r.Mode == xdslog.ModeSotW && f[i].RejectedResends >= 2 { // a loop, not one re-send
			s.add(i, srcRateLimit)
		}
	}
	return s.verdict(srcSpecAckNack)
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
		return attribution{attr: AttrProtocol, source: srcSpecOverview}
	}
	var s sources
	for i, r := range runs {
		re := d[i].re
		if re == nil {
			continue
		}
		switch {
		case r.Mode == xdslog.ModeDelta && isLinear(r):
			s.add(i, srcLinearDeltaInitial)
		case r.Mode == xdslog.ModeDelta:
			s.add(i, srcDeltaInitial)
		case re.Resources > 0 && isLinear(r):
			s.add(i, srcLinearNewStream)
		case re.Resources > 0:
			s.add(i, srcSnapshotNewStream)
		}
	}
	return s.verdict(srcSpecOverview)
}

// attributeAnomaly: an unanswered send lost with its stream is the protocol's nonce
// scoping; feedback naming a nonce never sent is not protocol behaviour.
func attributeAnomaly(f Figures) attribution {
	if f.Unmatched > 0 {
		return attribution{attr: AttrImplementation, source: srcUnmatched}
	}
	return attribution{attr: AttrProtocol, source: srcSpecNonce}
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

// crossVerdict is a matrix finding's label, how the pairs decided it, and its source.
type crossVerdict struct {
	attr, basis, source string
}

// attributeAcrossCaches labels one SotW-vs-delta difference across the pairs of a
// matrix. The rule: a difference is the protocol's only when every pair shows it alike,
// with the SnapshotCache and with the LinearCache, and each pair's own attribution says
// protocol; alike but attributed to an implementation in the pairs, it is the servers'
// (not the cache's); when pairs show it differently, what tells those pairs apart changes
// it: the cache alone (implementation, naming both caches' code), a SotW option or the
// client with the same cache, or several at once (all implementation choices). It cannot
// be decided when the pairs do not cover both caches (cov, from coverage) or when two
// pairs run with the same options disagree (timing, not a choice). Pairs are compared
// on their shapes (facet), never on figures that vary from run to run.
func attributeAcrossCaches(obs []pairFacet, cov string) crossVerdict {
	if cov != "" {
		return crossVerdict{attr: AttrUnattributed, basis: cov}
	}
	impl, allProtocol := implementationSources(obs)
	if !slices.ContainsFunc(obs, func(o pairFacet) bool { return o.shape != obs[0].shape }) {
		return alikeVerdict(obs, allProtocol, impl)
	}
	cs := comparePairs(obs)
	if len(cs.noise) > 0 {
		c := cs.noise[0]
		return crossVerdict{attr: AttrUnattributed, basis: fmt.Sprintf("%s and %s were run with the same options and still differ "+
			"(timing), so whose behaviour it is cannot be told", c.a.pair.Name, c.b.pair.Name)}
	}
	basis, cache := cs.basis()
	var src []string
	if cache {
		src = append(src, srcCacheAxis)
		for _, o := range obs {
			if o.pair.Cache == cacheSnapshot && (o.pair.sotw.versions == "uniform" || o.pair.sotw.policy == "resend") {
				src = append(src, srcSnapshotOnlyOptions)
				break
			}
		}
	}
	return crossVerdict{attr: AttrImplementation, basis: basis, source: strings.Join(append(src, impl...), "; ")}
}

// pairsByCache names the pairs by cache: "the SnapshotCache (A vs B, C vs B) and the
// LinearCache (D vs E)".
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
	return andList(parts)
}

// implementationSources are the sources, once each, of the pairs that show the
// difference and attribute it to an implementation; allProtocol is true when there are
// none. A two-run source joins its parts with "; " (sources.verdict), and no part of a
// pair kind's source contains one.
func implementationSources(obs []pairFacet) (impl []string, allProtocol bool) {
	allProtocol = true
	for _, o := range obs {
		if !o.present || o.attr.attr == AttrProtocol {
			continue
		}
		allProtocol = false
		for _, part := range strings.Split(o.attr.source, "; ") {
			if part != "" && !slices.Contains(impl, part) {
				impl = append(impl, part)
			}
		}
	}
	return impl, allProtocol
}

// alikeVerdict is the verdict when every pair shows the difference alike: the protocol's
// when every pair says so (with the first present pair's source), else the servers'.
func alikeVerdict(obs []pairFacet, allProtocol bool, impl []string) crossVerdict {
	if allProtocol {
		src := ""
		for _, o := range obs {
			if o.present {
				src = o.attr.source
				break
			}
		}
		return crossVerdict{attr: AttrProtocol, basis: "the same in every pair, with " + pairsByCache(obs), source: src}
	}
	return crossVerdict{attr: AttrImplementation, basis: "the same in every pair, with " + pairsByCache(obs) +
		", so not the cache's: the servers' choice either way", source: strings.Join(impl, "; ")}
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
		basis = fmt.Sprintf("%s %s it with the same cache: %s differ", andList(o.axes), verb, o.text())
		if len(cs.agreeOnCache) > 0 {
			basis += "; the cache does not: " + cs.agreeOnCache[0].text() + " agree"
		}
		return basis, false
	}
	c := cs.several[0]
	return fmt.Sprintf("%s differ between %s, and either may change it; all are implementation choices",
		andList(c.axes), c.text()), true
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

// andList is "a", "a and b", "a, b and c".
func andList(v []string) string {
	if len(v) < 2 {
		return strings.Join(v, "")
	}
	return strings.Join(v[:len(v)-1], ", ") + " and " + v[len(v)-1]
}
