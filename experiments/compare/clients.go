package compare

import (
	"fmt"
	"strings"

	"github.com/xds-workbench/lab/experiments/clientview"
)

// Clients is the report's section for two runs of different clients (run.json "client":
// Envoy against grpc-go, both SotW): where the clients' own behaviour differs, read from
// each run's xds.log, each difference attributed to one client's implementation or to
// the protocol. The protocol only when the xDS protocol document says so and both
// clients behave so; everything else names each client's component.
type Clients struct {
	// Names are A's and B's clients ("Envoy", "grpc-go").
	Names [2]string `json:"names"`
	// Differences are computed from the events; none is hand-written.
	Differences []ClientDifference `json:"differences"`
}

// ClientDifference is one behaviour of the two clients side by side.
type ClientDifference struct {
	// Topic is subscription, ack-names, nack, nack-view (the client's own view of what it
	// kept), nack-reason, nack-rate, reconnect, reconnect-delay or does-not-exist.
	Topic string `json:"topic"`
	Step  string `json:"step,omitempty"`
	Type  string `json:"type,omitempty"`
	// Runs are what A's and B's client did, as the evidence shows it.
	Runs [2]string `json:"runs"`
	// Same is true when both did the same (then the attribution may be the protocol).
	Same        bool   `json:"same"`
	Text        string `json:"text"`
	Attribution string `json:"attribution"`
	Source      string `json:"source"`
}

// clientKind is the run's client from run.json ("" when unknown).
func clientKind(r *Run) string {
	if r.Meta == nil {
		return ""
	}
	return r.Meta.Client
}

// Per-client implementation sources, by topic. Checked against Envoy's main branch
// (source paths below) and grpc-go v1.85.0.
var clientSources = map[string]map[string]string{
	clientview.ClientEnvoy: {
		"subscription": "Envoy: LdsApiImpl (source/common/listener_manager/lds_api.cc) and CdsApiImpl " +
			"(source/common/upstream/cds_api_impl.cc) start their subscription with no names (wildcard); " +
			"RDS and EDS watch the names their listener and clusters use",
		"ack-names": "Envoy: GrpcMuxImpl::sendDiscoveryRequest " +
			"(source/extensions/config_subscription/grpc/grpc_mux_impl.cc) repeats the watch's names, none " +
			"for a wildcard watch",
		"nack-reason": "Envoy: the response is proto-validated before it is applied " +
			"(MessageUtil::validate, source/common/protobuf/utility.h); GrpcMuxImpl::onDiscoveryResponse " +
			"(grpc_mux_impl.cc) puts the exception text, the resource's text proto first, in error_detail",
		"nack-view": "Envoy: its config dump keeps the last good route configuration and no error for it; " +
			"its version_info is the one that last changed the content (RdsRouteConfigSubscription::onConfigUpdate, " +
			"source/common/rds/rds_route_config_subscription.cc, skips a response whose content hash is unchanged)",
		"nack-rate": "Envoy: GrpcMuxImpl::onDiscoveryResponse (grpc_mux_impl.cc) answers every response; " +
			"ads_config.rate_limit_settings would throttle it (unset in the workbench's bootstrap)",
		"reconnect": "Envoy: GrpcMuxImpl::handleEstablishedStream (grpc_mux_impl.cc) re-sends each type's " +
			"request with its last accepted version_info and its watch's names (none for LDS/CDS wildcard)",
		"reconnect-delay": "Envoy: GrpcStream::onRemoteClose -> setRetryTimer " +
			"(source/extensions/config_subscription/grpc/grpc_stream.h), a jittered exponential backoff " +
			"reset by every response received",
		"does-not-exist": "Envoy: initial_fetch_timeout (GrpcSubscriptionImpl::start, " +
			"source/extensions/config_subscription/grpc/grpc_subscription_impl.cc) only ends initialization " +
			"waiting; a name never answered stays subscribed and its route answers 503 (NC: no cluster)",
	},
	clientview.ClientGRPC: {
		"subscription": "grpc-go: one watch per name (internal/xds/clients/xdsclient/ads_stream.go, subscribe), " +
			"starting from the listener named by the dial target; it never subscribes wildcard",
		"ack-names": "grpc-go: adsStreamImpl.onRecv (internal/xds/clients/xdsclient/ads_stream.go) ACKs and " +
			"NACKs with every subscribed name of the type",
		"nack-reason": "grpc-go: its own validation of the decoded resource, e.g. routesProtoToSlice " +
			"(internal/xds/xdsclient/xdsresource/unmarshal_rds.go: \"doesn't have a path specifier\")",
		"nack-view": "grpc-go: CSDS marks the resource NACKED with the rejected version and reason in " +
			"error_state and keeps the version_info of the last response that carried it valid " +
			"(authority.handleADSResourceUpdate, internal/xds/clients/xdsclient/authority.go)",
		"nack-rate": "grpc-go: adsStreamImpl.onRecv (internal/xds/clients/xdsclient/ads_stream.go) NACKs each " +
			"response as soon as it is decoded, with no pause or rate limit",
		"reconnect": "grpc-go: adsStreamImpl.sendExisting (internal/xds/clients/xdsclient/ads_stream.go) " +
			"re-sends each type with its last accepted version and every subscribed name",
		"reconnect-delay": "grpc-go: adsStreamImpl.runner (internal/xds/clients/xdsclient/ads_stream.go) " +
			"retries with StreamBackoffAfterFailure, by default backoff.DefaultConfig: 1 s base, x1.6, " +
			"jitter 0.2 (internal/xds/xdsclient/pool.go, backoff/backoff.go)",
		"does-not-exist": "grpc-go: a watch not answered within defaultWatchExpiryTimeout, 15 s " +
			"(internal/xds/clients/xdsclient/xdsclient.go; armed by adsStreamImpl.startWatchTimersLocked), " +
			"is reported does-not-exist; initial_fetch_timeout is not read",
	},
}

// Protocol sources for the client topics.
const (
	srcSpecWildcard = "xDS protocol: How the client specifies what resources to return (LDS and CDS " +
		"may be wildcard, no names; RDS and EDS are requested by name)"
	srcSpecDoesNotExist = "xDS protocol: Knowing When a Requested Resource Does Not Exist (for RDS and EDS " +
		"a SotW server cannot say so; the client decides with a timeout of its own)"
	srcSpecErrorDetail = "xDS protocol: ACK/NACK and resource type instance version (error_detail is " +
		"free text)"
	srcSpecNackKeeps = "xDS protocol: ACK/NACK and resource type instance version (a NACK carries the " +
		"previous good version_info: the client keeps running what it had)"
	srcSpecReconnectVersion = "xDS protocol: ACK/NACK and resource type instance version (a client may " +
		"send the version it has on a new stream)"
	srcNackResend = "the server's --nack-policy (resend: go-control-plane SnapshotCache answers a NACK's " +
		"version_info at once, pkg/cache/v3/simple.go CreateWatch); the protocol does not say when to " +
		"send again"
)

// sides joins each run's client source for topic: "A: ...; B: ...".
func sides(kinds [2]string, topic, extra string) string {
	var parts []string
	for i, k := range kinds {
		if s := clientSources[k][topic]; s != "" {
			parts = append(parts, RunLabel(i)+" "+s)
		}
	}
	if extra != "" {
		parts = append(parts, extra)
	}
	return strings.Join(parts, "; ")
}

// compareClients is the Clients section, or nil when the runs' clients are the same or
// not both known.
func compareClients(runs [2]*Run, steps []string) *Clients {
	kinds := [2]string{clientKind(runs[0]), clientKind(runs[1])}
	if kinds[0] == "" || kinds[1] == "" || kinds[0] == kinds[1] {
		return nil
	}
	c := &Clients{Names: [2]string{clientName(runs[0]), clientName(runs[1])}, Differences: []ClientDifference{}}
	var ev [2]clientEvidence
	in := set(steps)
	for i, r := range runs {
		ev[i] = gatherClientEvidence(r, in)
	}
	c.Differences = append(c.Differences, subscriptionDiffs(kinds, ev)...)
	c.Differences = append(c.Differences, nackDiffs(kinds, ev, steps)...)
	c.Differences = append(c.Differences, reconnectDiffs(kinds, ev)...)
	c.Differences = append(c.Differences, doesNotExistDiffs(kinds, ev, steps)...)
	for i := range c.Differences {
		d := &c.Differences[i]
		d.Text = differenceText(c.Names, *d)
	}
	return c
}

func differenceText(names [2]string, d ClientDifference) string {
	where := d.Topic
	if d.Type != "" {
		where = d.Type + " " + where
	}
	if d.Step != "" {
		where = stepName(d.Step) + ": " + where
	}
	if d.Runs[0] == d.Runs[1] {
		return fmt.Sprintf("%s: both (%s, %s) %s", where, names[0], names[1], d.Runs[0])
	}
	return fmt.Sprintf("%s: A (%s) %s; B (%s) %s", where, names[0], d.Runs[0], names[1], d.Runs[1])
}

// clientsIntro opens the section in every format.
func clientsIntro(c *Clients) string {
	return fmt.Sprintf("A runs %s and B runs %s: where the clients themselves differ, read from each run's "+
		"xds.log. The protocol only where the xDS protocol document says so and both clients do so.",
		c.Names[0], c.Names[1])
}

// writeTextClients writes the CLIENTS section of a text report (nothing when c is nil).
func writeTextClients(b *strings.Builder, c *Clients, pw int) {
	if c == nil {
		return
	}
	b.WriteString("\nCLIENTS\n")
	b.WriteString(wrap(clientsIntro(c), pw, "  ", "  "))
	if len(c.Differences) == 0 {
		b.WriteString("  none: the compared steps show no client behaviour to set side by side\n")
	}
	for i, d := range c.Differences {
		writeTextFinding(b, i, Finding{Text: d.Text, Attribution: d.Attribution, Source: d.Source}, pw)
	}
}

// writeMDClients writes the "Clients" section of a Markdown report (nothing when c is nil).
func writeMDClients(b *strings.Builder, c *Clients) {
	if c == nil {
		return
	}
	b.WriteString("\n## Clients\n\n" + mdEscape(clientsIntro(c)) + "\n\n")
	if len(c.Differences) == 0 {
		b.WriteString("None: the compared steps show no client behaviour to set side by side.\n")
	}
	for i, d := range c.Differences {
		marker := fmt.Sprintf("%d. ", i+1)
		fmt.Fprintf(b, "%s%s\n%s- *%s*: %s\n", marker, mdEscape(sanitize(d.Text)),
			strings.Repeat(" ", len(marker)), mdEscape(d.Attribution), mdEscape(sanitize(d.Source)))
	}
}
