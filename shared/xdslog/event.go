// Package xdslog is the workbench's evidence log: one JSON object per line for every
// publish, send, ACK and NACK, correlated by (server, stream, type, nonce). The Recorder
// writes it for both front ends; Read parses it back for summaries and comparisons.
package xdslog

import "time"

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
)

// KnownEvents is every event name a reader accepts.
var KnownEvents = map[string]bool{
	EventPublish: true, EventStreamOpen: true, EventStreamClose: true, EventRequest: true,
	EventSend: true, EventAck: true, EventNack: true, EventUnmatched: true,
	EventRefused: true, EventDataPlane: true, EventStep: true, EventSession: true, EventStorm: true,
}

// Modes.
const (
	ModeSotW  = "sotw"
	ModeDelta = "delta"
)

// Resource is one resource in a publish or send event.
type Resource struct {
	Type      string `json:"type,omitempty"`
	Name      string `json:"name"`
	Version   string `json:"version,omitempty"`
	Hash      string `json:"hash"`
	Redundant *bool  `json:"redundant,omitempty"`
}

// IsRedundant reports whether a sent resource was already accepted with this content.
func (r Resource) IsRedundant() bool { return r.Redundant != nil && *r.Redundant }

// Event is one line of xds.log. Fields are filled per event kind; see the README.
type Event struct {
	TS     time.Time `json:"ts"`
	Event  string    `json:"event"`
	Mode   string    `json:"mode"`
	Step   string    `json:"step"`
	Server int       `json:"server,omitempty"`
	Stream int64     `json:"stream,omitempty"`
	Type   string    `json:"type,omitempty"`

	Version         string            `json:"version,omitempty"`
	Resources       Resources         `json:"resources,omitempty"`
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
	Client    string `json:"client,omitempty"` // "envoy" or "simulated"
	Expected  string `json:"expected,omitempty"`
	Correct   *bool  `json:"correct,omitempty"`
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
