package compare

import (
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

var causeSource = [numCauses]string{srcSpecGrouping, srcSnapshotWholeType, srcSnapshotNewStream, srcUniformLabels, srcLabelNotContent, srcDeltaSent}

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

// attributeVersions: which versions move is the servers' labelling, never the protocol's
// (a SotW version_info and a delta resource version are both opaque strings).
func attributeVersions(runs [2]*Run) attribution {
	var s sources
	for i, r := range runs {
		switch {
		case r.Mode == xdslog.ModeDelta:
			s.add(i, srcDeltaVersions)
		case sotwStrategy(r) == "per-type":
			s.add(i, srcPerTypeLabels)
		default:
			s.add(i, srcUniformLabels)
		}
	}
	return s.verdict(srcSpecAckNack)
}

// attributeRedundant names why each run re-sent content its client already ran. Only
// the LDS/CDS full-state rule is the protocol's; everything else is a choice.
func attributeRedundant(d [2]*detail) attribution {
	var s sources
	protocol := false
	for i, x := range d {
		for c := range numCauses {
			if x.causes[c] == 0 {
				continue
			}
			if c == causeFullState {
				protocol = true
				continue
			}
			s.add(i, causeSource[c])
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
		case f[i].RejectedResends == 0 && sotwPolicy(r) == "hold":
			s.add(i, srcHold)
		default:
			s.add(i, srcSnapshotNack)
			if f[i].RejectedResends >= 2 { // a loop, not one re-send
				s.add(i, srcRateLimit)
			}
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
		if r.Mode == xdslog.ModeDelta {
			s.add(i, srcDeltaInitial)
		} else if re.Resources > 0 {
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
