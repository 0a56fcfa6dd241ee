// Package xdslog is the workbench's evidence log: one JSON object per line for every
// publish, send, ACK and NACK, correlated by (server, stream, type, nonce). The Recorder
// writes it for both front ends; Read parses it back for summaries and comparisons.
package xdslog

import (
	"slices"
	"time"

	"github.com/xds-workbench/lab/shared/protocol"
)

// Event names.
const (
	EventPublish     = "publish"
	EventStreamOpen  = "stream_open"
	EventStreamClose = "stream_close"
	EventRequest     = "request"
	EventSend        = "send"
	EventAck         = "ack"
	EventNack        = "nack"
	EventUnmatched   = "unmatched"
	// EventStale is a SotW request whose response_nonce is not the latest sent for its
	// type on the stream: go-control-plane drops it (pkg/server/sotw/v3/ads.go), so it
	// neither answers a send nor changes the subscription.
	EventStale = "stale"
	// EventRefused is a request the front end refused (wrong protocol, unknown type,
	// oversized or malformed); the stream is closed with the status in Error.
	EventRefused = "refused"
	// EventDataPlane is one request sent through the data plane at a checkpoint.
	EventDataPlane = "dataplane"
	// EventStep marks the start of a scenario step (the runner writes it).
	EventStep = "step"
	// EventSession opens one recorder's session: every Recorder writes it first, so logs
	// appended to by several `lab serve` sessions can be told apart (see Sessions).
	EventSession = "session"
	// EventStorm stands for repeated NACK/re-send pairs of the same rejected content that
	// were not written one line each because the log passed its size limit: counts, first
	// and last nonce, and the repeated send's resources. Readers count it as Sends sends
	// and Nacks NACKs.
	EventStorm = "storm"
	// EventRevert is the control plane's answer to a SotW NACK under the revert NACK
	// policy: Version is the label of the set it republishes (the last content the client
	// accepted for Type on Stream), or, when it does not revert, Version is empty and
	// Error says why (the NACK then holds). SentVersion is the rejected version.
	EventRevert = "revert"
	// EventTraffic summarizes the steady load of one step (lab run --load): requests,
	// answers per backend, failures per status and flag, asked and achieved rate,
	// latency percentiles.
	EventTraffic = "traffic"
	// EventUndecodable is a message lab tap forwarded unchanged but could not record:
	// not a discovery message, or of a type the workbench does not model. Kind says which
	// way it went (KindRequest: client to server, KindResponse: server to client), Error
	// why, Bytes its size. It answers no send and changes no subscription.
	EventUndecodable = "undecodable"
	// EventClientView is the runner's cross-check at a step's checkpoint: the client's
	// own view (Envoy's config dump, grpc-go's CSDS) compared with this log's model of
	// the client's stream (experiments/clientview). Client says whose, Stream which
	// stream, Checked how many resources the view listed, Findings every disagreement
	// (none: they agree), Error why the view could not be read.
	EventClientView = "client_view"
)

// Directions of an undecodable message (Event.Kind of EventUndecodable).
const (
	KindRequest  = "request"
	KindResponse = "response"
)

// SourceTap is the Source of a session recorded by lab tap: a transparent proxy sees
// the streams but not the server's state, so its log has no publish events.
const SourceTap = "tap"

// Types are the xDS types the workbench records, in display order (the order Envoy's
// own ADS sequencing applies them: listeners, their routes, clusters, their endpoints),
// then VHDS, the virtual hosts a route configuration fetches on demand, and SDS, the
// secrets a TLS listener fetches by name.
var Types = []string{"LDS", "RDS", "CDS", "EDS", "VHDS", "SDS"}

// KnownEvents is every event name a reader accepts.
var KnownEvents = map[string]bool{
	EventPublish: true, EventStreamOpen: true, EventStreamClose: true, EventRequest: true,
	EventSend: true, EventAck: true, EventNack: true, EventUnmatched: true, EventStale: true,
	EventRefused: true, EventDataPlane: true, EventStep: true, EventSession: true, EventStorm: true,
	EventRevert: true, EventTraffic: true, EventUndecodable: true, EventClientView: true,
}

// Probe kinds (Event.Probe of a data-plane event).
const (
	ProbeRequest = "request"
	ProbeWindow  = "window"
	ProbeOutage  = "outage"
	// ProbeLoad is a request of the steady load (lab run --load).
	ProbeLoad = "load"
)

// Request kinds: what a request did to the subscription ("How the client specifies what
// resources to return" in the xDS protocol doc).
const (
	// RequestWildcard is the first request of a type on a stream without names: a legacy
	// wildcard subscription.
	RequestWildcard = "wildcard"
	// RequestInitial is the first request of a type on a stream, with names.
	RequestInitial = "initial"
	// RequestResume is a first request that says what the client already has (SotW
	// version_info, delta initial_resource_versions): a reconnect.
	RequestResume = "resume"
	// RequestSubscribe adds or removes names (Added, Removed).
	RequestSubscribe = "subscribe"
	// RequestUnsubscribe leaves the subscription empty: in SotW, empty names after an
	// explicit subscription (not a wildcard: that is only while never subscribed).
	RequestUnsubscribe = "unsubscribe"
	// RequestRepeat asks again without changing anything and without answering a send:
	// a SotW request carrying an already-answered nonce and the same names.
	RequestRepeat = "re-request"
	// RequestOnDemand is a subscribe (Added, Removed) that traffic asked for: a delta
	// request adding names of an on-demand type (OnDemandTypes). Envoy sends it when a
	// request needs a virtual host ("<route>/<Host>", route_config_update_requster.cc) or
	// a cluster (on_demand filter's odcds, on_demand_update.cc) it does not hold, with
	// response_nonce "". IsOnDemand is the rule.
	RequestOnDemand = "on-demand"
)

// OnDemandTypes are the types a delta client subscribes to on demand: virtual hosts
// (VHDS) and clusters (on-demand CDS).
var OnDemandTypes = []string{"VHDS", "CDS"}

// IsOnDemand is the one rule for an on-demand subscribe: in delta, a request of an
// on-demand type that adds names other than "*" after the stream's first request of the
// type (first is false), or a first CDS request that names clusters and no "*" (first is
// true; a reconnect's resume is never asked). Envoy's first VHDS request is a legacy
// wildcard (its namespace-matching watch sends no names), and its CDS from cds_config a
// wildcard too, so those are not on demand; but with on-demand CDS alone (no
// cds_config) its first CDS request already names the cluster traffic asked for
// (OdCdsApiImpl::updateOnDemand starts the subscription with it). The recorder writes
// the answer into the request event (RequestOnDemand), so readers never re-derive it.
func IsOnDemand(mode protocol.Mode, typ string, first bool, added []string) bool {
	if mode != protocol.Delta || !slices.Contains(OnDemandTypes, typ) {
		return false
	}
	if first {
		return typ == "CDS" && len(added) > 0 && !slices.Contains(added, "*")
	}
	return slices.ContainsFunc(added, func(n string) bool { return n != "*" })
}

// Resource is one resource in a publish or send event.
type Resource struct {
	Type      string `json:"type,omitempty"`
	Name      string `json:"name"`
	Version   string `json:"version,omitempty"`
	Hash      string `json:"hash"`
	Redundant *bool  `json:"redundant,omitempty"`
	// NotFound marks a sent delta resource with a name (and that name as its alias) but
	// no body: the server says the name does not exist (VHDS, publish.OnDemandCache).
	// It is an answer, not content: never redundant (the recorder leaves Redundant
	// unset), and the model does not count it as held.
	NotFound bool `json:"not_found,omitempty"`
}

// IsRedundant reports whether a sent resource was already accepted with this content.
func (r Resource) IsRedundant() bool { return r.Redundant != nil && *r.Redundant }

// Event is one line of xds.log. Fields are filled per event kind; see the README.
type Event struct {
	TS     time.Time     `json:"ts"`
	Event  string        `json:"event"`
	Mode   protocol.Mode `json:"mode"`
	Step   string        `json:"step"`
	Server int           `json:"server,omitempty"`
	Stream int64         `json:"stream,omitempty"`
	Type   string        `json:"type,omitempty"`

	Version string `json:"version,omitempty"`
	// Request fields (EventRequest): what the request was (Request* kinds), the names it
	// added and removed, whether the subscription is wildcard after it, the subscribed
	// names the published state lacks, and for a SotW resume the content the server maps
	// the resumed label to (Held) or that it cannot (HeldUnknown). Removed doubles as the
	// names removed from the subscription.
	Kind string `json:"kind,omitempty"`
	// Node is the node ID: on the first request event of a stream that names one, on a
	// publish when the control plane serves one state per node, and on a revert.
	Node string `json:"node,omitempty"`
	// Peer is the client's address (stream_open, refused).
	Peer        string            `json:"peer,omitempty"`
	Added       []string          `json:"added,omitempty"`
	Wildcard    bool              `json:"wildcard,omitempty"`
	Missing     []string          `json:"missing,omitempty"`
	Held        map[string]string `json:"held,omitempty"`
	HeldUnknown bool              `json:"held_unknown,omitempty"`
	// LatestNonce is the latest nonce sent for the type when a request is stale.
	LatestNonce string    `json:"latest_nonce,omitempty"`
	Resources   Resources `json:"resources,omitempty"`
	// Incremental marks a publish that lists only what changed: Resources the added and
	// modified resources, Deleted the ones gone (with the hash they had).
	Incremental     bool              `json:"incremental,omitempty"`
	Deleted         Resources         `json:"deleted,omitempty"`
	Changed         []string          `json:"changed,omitempty"`
	Names           []string          `json:"names,omitempty"`
	InitialVersions map[string]string `json:"initial_versions,omitempty"`
	Nonce           string            `json:"nonce,omitempty"`
	Removed         []string          `json:"removed,omitempty"`
	Bytes           int               `json:"bytes,omitempty"`
	SentVersion     string            `json:"sent_version,omitempty"`
	AcceptedVersion *string           `json:"accepted_version,omitempty"`
	LatencyMS       *float64          `json:"latency_ms,omitempty"`
	Error           string            `json:"error,omitempty"`
	Repeat          int               `json:"repeat,omitempty"`
	Dropped         *int              `json:"dropped,omitempty"`

	// Session fields (EventSession).
	Session string `json:"session,omitempty"`
	PID     int    `json:"pid,omitempty"`
	// MaxLogBytes is the size past which storms are condensed (0: never).
	MaxLogBytes int64 `json:"max_log_bytes,omitempty"`
	// Source is who recorded the session: "" for the workbench's own control plane,
	// SourceTap for lab tap (Upstream is then the server it forwards to).
	Source string `json:"source,omitempty"`
	// NoPublish says the session has no publish events by construction (a tap cannot
	// see the upstream's state): its redundancy is per stream, and nothing is "missing".
	NoPublish bool `json:"no_publish,omitempty"`

	// Storm summary fields (EventStorm); Nonce is the first condensed nonce, Bytes the
	// condensed sends' total, Resources one condensed send's resources, Repeat the last
	// NACK's repeat count.
	Summary   bool       `json:"summary,omitempty"`
	Sends     int        `json:"sends,omitempty"`
	Nacks     int        `json:"nacks,omitempty"`
	LastNonce string     `json:"last_nonce,omitempty"`
	FirstTS   *time.Time `json:"first_ts,omitempty"`

	// Data-plane fields (EventDataPlane).
	RequestID string `json:"request_id,omitempty"`
	Status    int    `json:"status,omitempty"`
	Backend   string `json:"backend,omitempty"`
	Flags     string `json:"flags,omitempty"`
	Upstream  string `json:"upstream,omitempty"`
	Client    string `json:"client,omitempty"` // "envoy", "grpc" or "simulated"
	Expected  string `json:"expected,omitempty"`
	Correct   *bool  `json:"correct,omitempty"`
	// Path is the request's path (with its query).
	Path string `json:"path,omitempty"`
	// Host is the request's Host (:authority) when the probe set one: what on-demand
	// VHDS subscribes by ("<route>/<Host>").
	Host string `json:"host,omitempty"`
	// SentTS is when the request was sent (TS is when it was answered): the start of an
	// on-demand fetch's timeline.
	SentTS *time.Time `json:"sent_ts,omitempty"`
	// Probe says why the request was sent: ProbeRequest (an expectation's request, sent
	// until it gets its answer), ProbeWindow (a traffic-window probe, sent every few
	// milliseconds for a whole step) or ProbeOutage (sent while the control plane is down).
	Probe string `json:"probe,omitempty"`
	// Represents, when 2 or more, says this event stands for that many probes with the
	// same answer: a long traffic window keeps every failure but only a sample of its
	// successes. 0 means 1.
	Represents int `json:"represents,omitempty"`

	// Client-view fields (EventClientView); Client, Stream and Error too.
	Checked  int      `json:"checked,omitempty"`
	Findings []string `json:"findings,omitempty"`

	// Traffic fields (EventTraffic); Status/Backend/... are not used.
	Traffic *Traffic `json:"traffic,omitempty"`

	// condensed marks a send the recorder folded into a storm summary (never written).
	condensed bool
}

// Traffic is one step's steady load, as counted from every response (load.Summarize):
// answers per backend, failures per status and Envoy response flag ("503 NC"), asked
// and achieved rate, latency percentiles in ms.
type Traffic struct {
	Requests     int            `json:"requests"`
	OK           int            `json:"ok"`
	ByBackend    map[string]int `json:"by_backend"`
	Failures     map[string]int `json:"failures"`
	AskedRate    float64        `json:"asked_rate"`
	AchievedRate float64        `json:"achieved_rate"`
	P50MS        float64        `json:"p50_ms"`
	P99MS        float64        `json:"p99_ms"`
	MaxMS        float64        `json:"max_ms"`
	Protocol     string         `json:"protocol"`
	Connections  int            `json:"connections"`
	// DurationMS is the length of the step's count window (its requests' send times).
	DurationMS float64 `json:"duration_ms,omitempty"`
	// Unlogged counts answers that named a backend whose own request log has no line
	// with the request's ID; Misattributed, those whose log line is another backend's.
	// Both are 0 when the evidence agrees (and when no backend log was read).
	Unlogged      int `json:"unlogged,omitempty"`
	Misattributed int `json:"misattributed,omitempty"`
	// Overflow counts responses past the generator's bound: counted in Requests, but
	// with no status or backend of their own.
	Overflow int `json:"overflow,omitempty"`
	// Move is how traffic moved from the last step's backend to this step's.
	Move *TrafficMove `json:"move,omitempty"`
	// Timeline is the step's requests over time, for the traffic timeline.
	Timeline *Timeline `json:"timeline,omitempty"`
}

// BehindShare is the share of the asked rate below which a load fell behind.
const BehindShare = 0.9

// minBehindMS is the shortest count window whose rate says anything: in a shorter one the
// first request's place in its period weighs too much.
const minBehindMS = 1000

// FellBehind says the load achieved less than BehindShare of its asked rate over a window
// of a second or more: the generator (or the machine) could not keep the rate, and the
// step's figures are for the rate achieved, not the one asked.
func (t Traffic) FellBehind() bool {
	return t.AskedRate > 0 && t.DurationMS >= minBehindMS && t.AchievedRate < BehindShare*t.AskedRate
}

// TrafficMove is how traffic moved from one backend to another after a publish.
type TrafficMove struct {
	From string `json:"from"`
	To   string `json:"to"`
	// FirstOldMS and LastOldMS: from the publish to the first and the last response
	// (by when it was sent) answered by the old backend; nil when none was.
	FirstOldMS *float64 `json:"first_old_ms,omitempty"`
	LastOldMS  *float64 `json:"last_old_ms,omitempty"`
	// LastOldAnsweredMS: from the publish to when the old answer that came last arrived,
	// counting requests sent before the publish too: requests already routed to the old
	// endpoint finish after the change landed (seed 003 §10.3). nil when none came after.
	LastOldAnsweredMS *float64 `json:"last_old_answered_ms,omitempty"`
	// AllNewMS: from the publish to the first request after which every answer came
	// from the new backend; nil when the window never got there.
	AllNewMS *float64 `json:"all_new_ms,omitempty"`
	// OldAfter counts the old backend's answers to requests sent after the publish.
	OldAfter int `json:"old_after"`
}

// Timeline is a step's requests in buckets of BucketMS from Start (by when each was
// sent): Series maps an answer to its count per bucket, a backend's name for a success
// ("v1") and the failure key for a failure ("503 NC"); every series has the same length.
type Timeline struct {
	Start    time.Time        `json:"start"`
	BucketMS float64          `json:"bucket_ms"`
	Series   map[string][]int `json:"series"`
}

// Accepted returns AcceptedVersion or "".
func (e Event) Accepted() string {
	if e.AcceptedVersion == nil {
		return ""
	}
	return *e.AcceptedVersion
}

// Latency returns LatencyMS or 0.
func (e Event) Latency() float64 {
	if e.LatencyMS == nil {
		return 0
	}
	return *e.LatencyMS
}
