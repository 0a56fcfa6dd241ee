// Package analysis turns an xds.log into figures: per scenario step and per type, what was
// sent, what was redundant or removed, how the client answered, how long it took, and
// what the data plane showed. summary.json and `lab compare` are both computed here, so
// the two can never disagree.
package analysis

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/xds-workbench/lab/shared/xdslog"
)

// Types in display order.
var Types = []string{"LDS", "RDS", "CDS", "EDS"}

// TypeFigures are one type's figures in one step.
type TypeFigures struct {
	Responses int `json:"responses"`
	Resources int `json:"resources"`
	Redundant int `json:"redundant"`
	// RedundantBytes estimates the bytes of redundant resources (their share of each send).
	RedundantBytes int `json:"redundant_bytes"`
	// RemovedExplicit counts names in delta removed_resources.
	RemovedExplicit int `json:"removed_explicit"`
	// RemovedByAbsence counts names that a SotW LDS/CDS response left out compared with
	// the previous response on the same stream.
	RemovedByAbsence int `json:"removed_by_absence"`
	Acks             int `json:"acks"`
	Nacks            int `json:"nacks"`
	// RejectedResends counts sends whose content had already been rejected on that stream.
	RejectedResends int `json:"rejected_resends"`
	Bytes           int `json:"bytes"`
	Unmatched       int `json:"unmatched,omitempty"`
}

// DataPlane is the last data-plane observation of a step.
type DataPlane struct {
	Client    string `json:"client"`
	RequestID string `json:"request_id"`
	Status    int    `json:"status"`
	Backend   string `json:"backend,omitempty"`
	Flags     string `json:"flags,omitempty"`
	Upstream  string `json:"upstream,omitempty"`
	Expected  string `json:"expected,omitempty"`
	Correct   bool   `json:"correct"`
}

// Step is one scenario step's figures.
type Step struct {
	Name      string                  `json:"name"`
	Version   string                  `json:"version,omitempty"` // label published in the step
	Changed   []string                `json:"changed,omitempty"`
	Types     map[string]*TypeFigures `json:"types"`
	Total     TypeFigures             `json:"total"`
	StreamsUp int                     `json:"streams_opened"`
	// Dropped counts sends never answered on streams that closed in this step.
	Dropped int `json:"dropped"`
	// PublishToAckMS is the median time from the step's publish (or start) to each ACK.
	PublishToAckMS *float64 `json:"publish_to_ack_ms_median,omitempty"`
	// PublishToCorrectMS is the time from the publish to the first data-plane request
	// that got the expected answer.
	PublishToCorrectMS *float64   `json:"publish_to_first_correct_request_ms,omitempty"`
	DataPlane          *DataPlane `json:"data_plane,omitempty"`
	// Versions is what the client accepted by the end of the step, per type and name,
	// according to the log (the last ACKed send of each resource).
	Versions map[string]map[string]string `json:"versions"`
	// NackErrors are the distinct NACK messages of the step.
	NackErrors []string `json:"nack_errors,omitempty"`
	// NackRate is NACKs per second over the step's NACK window (storm rate).
	NackRate float64 `json:"nack_rate_per_s,omitempty"`

	start   time.Time
	publish time.Time
	acks    []float64
	// The NACK window, for the storm rate: count, first and last NACK.
	nackN               int
	nackFirst, nackLast time.Time
}

// nackAt adds n NACKs between first and last to the step's NACK window.
func (st *Step) nackAt(n int, first, last time.Time) {
	if st.nackN == 0 || first.Before(st.nackFirst) {
		st.nackFirst = first
	}
	if last.After(st.nackLast) {
		st.nackLast = last
	}
	st.nackN += n
}

// Summary is a whole log's figures.
type Summary struct {
	Mode    string      `json:"mode"`
	Events  int         `json:"events"`
	Skipped int         `json:"skipped_lines,omitempty"`
	Steps   []*Step     `json:"steps"`
	Total   TypeFigures `json:"total"`
}

// Step returns the named step or nil.
func (s *Summary) Step(name string) *Step {
	for _, st := range s.Steps {
		if st.Name == name {
			return st
		}
	}
	return nil
}

type key struct {
	server int
	stream int64
	typ    string
}

type sendRec struct {
	ev          xdslog.Event
	fingerprint string
}

// Summarize computes the figures of a log. Events must be in log order.
func Summarize(events []xdslog.Event) *Summary {
	sum := &Summary{Events: len(events)}
	steps := map[string]*Step{}
	get := func(e xdslog.Event) *Step {
		st, ok := steps[e.Step]
		if !ok {
			st = &Step{Name: e.Step, Types: map[string]*TypeFigures{}, Versions: map[string]map[string]string{}, start: e.TS}
			steps[e.Step] = st
			sum.Steps = append(sum.Steps, st)
		}
		return st
	}
	fig := func(st *Step, typ string) *TypeFigures {
		f, ok := st.Types[typ]
		if !ok {
			f = &TypeFigures{}
			st.Types[typ] = f
		}
		return f
	}
	sends := map[key]map[string]sendRec{}
	lastNames := map[key][]string{}
	rejected := map[key]map[string]bool{}
	accepted := map[string]map[string]string{} // type -> name -> version
	for _, e := range events {
		if sum.Mode == "" {
			sum.Mode = e.Mode
		}
		if e.Event == xdslog.EventSession {
			continue // a boundary, not part of any step
		}
		st := get(e)
		k := key{e.Server, e.Stream, e.Type}
		switch e.Event {
		case xdslog.EventPublish:
			st.Version = e.Version
			st.Changed = e.Changed
			st.publish = e.TS
		case xdslog.EventStreamOpen:
			st.StreamsUp++
		case xdslog.EventSend:
			f := fig(st, e.Type)
			f.Responses++
			f.Resources += len(e.Resources)
			f.Bytes += e.Bytes
			f.RemovedExplicit += len(e.Removed)
			for _, r := range e.Resources {
				if r.IsRedundant() {
					f.Redundant++
					if len(e.Resources) > 0 {
						f.RedundantBytes += e.Bytes / len(e.Resources)
					}
				}
			}
			names := make([]string, len(e.Resources))
			for i, r := range e.Resources {
				names[i] = r.Name
			}
			if e.Mode == xdslog.ModeSotW && (e.Type == "LDS" || e.Type == "CDS") {
				for _, n := range lastNames[k] {
					if !slices.Contains(names, n) {
						f.RemovedByAbsence++
					}
				}
				lastNames[k] = names
			}
			fp := fingerprint(e)
			if rejected[k][fp] {
				f.RejectedResends++
			}
			if sends[k] == nil {
				sends[k] = map[string]sendRec{}
			}
			sends[k][e.Nonce] = sendRec{ev: e, fingerprint: fp}
		case xdslog.EventAck:
			f := fig(st, e.Type)
			f.Acks++
			ref := st.publish
			if ref.IsZero() {
				ref = st.start
			}
			st.acks = append(st.acks, float64(e.TS.Sub(ref).Microseconds())/1000)
			if s, ok := sends[k][e.Nonce]; ok {
				applyAck(accepted, e.Mode, e.Type, s.ev)
			}
		case xdslog.EventStorm:
			// Condensed NACK/re-send pairs (the log passed its size limit): every one is a
			// send of content already rejected on this stream, and its NACK.
			f := fig(st, e.Type)
			f.Responses += e.Sends
			f.Resources += e.Sends * len(e.Resources)
			f.Bytes += e.Bytes
			f.RejectedResends += e.Sends
			f.Nacks += e.Nacks
			for _, r := range e.Resources {
				if r.IsRedundant() {
					f.Redundant += e.Sends
					f.RedundantBytes += e.Bytes / len(e.Resources)
				}
			}
			if e.Nacks > 0 {
				first := e.TS
				if e.FirstTS != nil {
					first = *e.FirstTS
				}
				st.nackAt(e.Nacks, first, e.TS)
			}
			if e.Error != "" && !slices.Contains(st.NackErrors, e.Error) && len(st.NackErrors) < 5 {
				st.NackErrors = append(st.NackErrors, e.Error)
			}
		case xdslog.EventNack:
			f := fig(st, e.Type)
			f.Nacks++
			st.nackAt(1, e.TS, e.TS)
			if !slices.Contains(st.NackErrors, e.Error) && len(st.NackErrors) < 5 {
				st.NackErrors = append(st.NackErrors, e.Error)
			}
			if s, ok := sends[k][e.Nonce]; ok {
				if rejected[k] == nil {
					rejected[k] = map[string]bool{}
				}
				rejected[k][s.fingerprint] = true
			}
		case xdslog.EventUnmatched:
			fig(st, e.Type).Unmatched++
		case xdslog.EventStreamClose:
			if e.Dropped != nil && *e.Dropped > 0 {
				st.Dropped += *e.Dropped
			}
			for kk := range sends {
				if kk.server == e.Server && kk.stream == e.Stream {
					delete(sends, kk)
					delete(lastNames, kk)
					delete(rejected, kk)
				}
			}
		case xdslog.EventDataPlane:
			correct := e.Correct != nil && *e.Correct
			st.DataPlane = &DataPlane{Client: e.Client, RequestID: e.RequestID, Status: e.Status, Backend: e.Backend,
				Flags: e.Flags, Upstream: e.Upstream, Expected: e.Expected, Correct: correct}
			if correct && st.PublishToCorrectMS == nil && !st.publish.IsZero() {
				ms := float64(e.TS.Sub(st.publish).Microseconds()) / 1000
				st.PublishToCorrectMS = &ms
			}
		}
		// Versions at the end of each step: a copy of the replayed accepted table.
		st.Versions = copyVersions(accepted)
	}
	for _, st := range sum.Steps {
		for _, f := range st.Types {
			add(&st.Total, f)
		}
		add(&sum.Total, &st.Total)
		if len(st.acks) > 0 {
			m := median(st.acks)
			st.PublishToAckMS = &m
		}
		if n := st.nackN; n > 1 {
			if d := st.nackLast.Sub(st.nackFirst).Seconds(); d > 0 {
				st.NackRate = float64(n-1) / d
			}
		}
	}
	return sum
}

func applyAck(acc map[string]map[string]string, mode, typ string, s xdslog.Event) {
	if acc[typ] == nil || (mode == xdslog.ModeSotW && (typ == "LDS" || typ == "CDS")) {
		acc[typ] = map[string]string{}
	}
	for _, r := range s.Resources {
		acc[typ][r.Name] = r.Version
	}
	if typ == "LDS" || typ == "CDS" {
		for _, n := range s.Removed {
			delete(acc[typ], n)
		}
	}
}

func copyVersions(acc map[string]map[string]string) map[string]map[string]string {
	out := make(map[string]map[string]string, len(acc))
	for t, m := range acc {
		c := make(map[string]string, len(m))
		for k, v := range m {
			c[k] = v
		}
		out[t] = c
	}
	return out
}

func fingerprint(e xdslog.Event) string {
	parts := make([]string, 0, len(e.Resources)+len(e.Removed))
	for _, r := range e.Resources {
		parts = append(parts, r.Name+"="+r.Hash)
	}
	for _, n := range e.Removed {
		parts = append(parts, "-"+n)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func add(dst, f *TypeFigures) {
	dst.Responses += f.Responses
	dst.Resources += f.Resources
	dst.Redundant += f.Redundant
	dst.RedundantBytes += f.RedundantBytes
	dst.RemovedExplicit += f.RemovedExplicit
	dst.RemovedByAbsence += f.RemovedByAbsence
	dst.Acks += f.Acks
	dst.Nacks += f.Nacks
	dst.RejectedResends += f.RejectedResends
	dst.Bytes += f.Bytes
	dst.Unmatched += f.Unmatched
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
