package analysis

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/xds-workbench/lab/shared/xdslog"
)

// On-demand fetches: each name a client subscribed to because traffic asked for it (a
// request event of kind xdslog.RequestOnDemand: the recorder decided, by
// xdslog.IsOnDemand), with its timeline. The clock starts when the data-plane request that
// asked for the name was sent (its SentTS) and marks the subscribe request, the response
// that carried the name (or said it does not exist) and the request's answer (its TS):
// what the on_demand filter held the request for.

// OnDemand is a step's on-demand subscriptions.
type OnDemand struct {
	// Subscribes counts on-demand subscribe requests per type (VHDS, CDS).
	Subscribes map[string]int `json:"subscribes"`
	// Available is how many names of each on-demand type the published state had at the
	// step's last on-demand subscribe; absent when the log has no publish (lab tap).
	Available map[string]int `json:"available,omitempty"`
	// Fetches are the names subscribed on demand, in subscribe order.
	Fetches []Fetch `json:"fetches"`
}

// Fetch is one name subscribed on demand and its timeline.
type Fetch struct {
	Type   string `json:"type"`
	Name   string `json:"name"`
	Server int    `json:"server,omitempty"`
	Stream int64  `json:"stream,omitempty"`
	// Subscribed is when the subscribe request was seen; Responded when the first later
	// response on the stream carried the name (nil: none did).
	Subscribed time.Time  `json:"subscribed"`
	Responded  *time.Time `json:"responded,omitempty"`
	// Answer is what that response said: FetchFound (the resource), FetchNotFound (a
	// bodiless "does not exist", xdslog.Resource.NotFound) or FetchRemoved (the name in
	// removed_resources); "" when no response carried the name.
	Answer string `json:"answer,omitempty"`
	// The data-plane request that asked for the name (the first sent, among those in
	// flight when the subscribe went out, whose Host names it for VHDS): its ID, Host,
	// status and backend. Empty when no probe with a send time matched.
	RequestID string `json:"request_id,omitempty"`
	Host      string `json:"host,omitempty"`
	Status    int    `json:"status,omitempty"`
	Backend   string `json:"backend,omitempty"`
	// SubscribeMS, ResponseMS and AnswerMS are ms from that request's send to the
	// subscribe, to the response, and to the request's answer; nil when unknown.
	SubscribeMS *float64 `json:"subscribe_ms,omitempty"`
	ResponseMS  *float64 `json:"response_ms,omitempty"`
	AnswerMS    *float64 `json:"answer_ms,omitempty"`

	// sent and answered are the matched probe's times (zero: none matched).
	sent, answered time.Time
}

// Fetch answers (Fetch.Answer).
const (
	FetchFound    = "found"
	FetchNotFound = "not found"
	FetchRemoved  = "removed"
)

// maxFetchesPerStep bounds one step's fetch list (a bench fetching 100,000 hosts in one
// step keeps the first ones; Subscribes still counts every request).
const maxFetchesPerStep = 10_000

// onDemandTally is the accumulator's on-demand state across steps: fetches waiting for a
// response per stream and type, and fetches a probe may still claim, VHDS by host and
// CDS in subscribe order.
type onDemandTally struct {
	waiting map[key]map[string]*Fetch
	byHost  map[string][]*Fetch
	cds     []*Fetch
}

// maxOpenCDS bounds the CDS fetches no probe has claimed yet.
const maxOpenCDS = 1024

func newOnDemandTally() *onDemandTally {
	return &onDemandTally{waiting: map[key]map[string]*Fetch{}, byHost: map[string][]*Fetch{}}
}

// subscribe records an on-demand request's new names in st.
func (o *onDemandTally) subscribe(st *Step, e xdslog.Event, available int, known bool) {
	od := st.onDemand()
	od.Subscribes[e.Type]++
	if known {
		if od.Available == nil {
			od.Available = map[string]int{}
		}
		od.Available[e.Type] = available
	}
	k := key{e.Server, e.Stream, e.Type}
	for _, n := range e.Added {
		if n == "*" || len(st.fetches) >= maxFetchesPerStep {
			continue
		}
		f := &Fetch{Type: e.Type, Name: n, Server: e.Server, Stream: e.Stream, Subscribed: e.TS}
		st.fetches = append(st.fetches, f)
		if o.waiting[k] == nil {
			o.waiting[k] = map[string]*Fetch{}
		}
		o.waiting[k][n] = f
		switch e.Type {
		case "VHDS":
			if _, host, ok := strings.Cut(n, "/"); ok {
				o.byHost[host] = append(o.byHost[host], f)
			}
		case "CDS":
			if len(o.cds) >= maxOpenCDS {
				o.cds = o.cds[1:]
			}
			o.cds = append(o.cds, f)
		}
	}
}

// send marks the fetches a response answers: a resource (found or not) or a removal.
func (o *onDemandTally) send(e xdslog.Event) {
	w := o.waiting[key{e.Server, e.Stream, e.Type}]
	if len(w) == 0 {
		return
	}
	answer := func(name, how string) {
		if f, ok := w[name]; ok {
			ts := e.TS
			f.Responded, f.Answer = &ts, how
			delete(w, name)
		}
	}
	for _, r := range e.Resources {
		if r.NotFound {
			answer(r.Name, FetchNotFound)
		} else {
			answer(r.Name, FetchFound)
		}
	}
	for _, n := range e.Removed {
		answer(n, FetchRemoved)
	}
}

// closeStream forgets the fetches a closed stream will never answer.
func (o *onDemandTally) closeStream(server int, stream int64) {
	for k := range o.waiting {
		if k.server == server && k.stream == stream {
			delete(o.waiting, k)
		}
	}
}

// probe lets a data-plane request claim the fetches it caused: those subscribed while it
// was in flight (sent at or before the subscribe, answered at or after it) that it asked
// for: a VHDS name "<route>/<Host>" (Envoy lower-cases the Host, keeping its port), or a
// CDS name (the request does not say which cluster its route named, so the first in
// flight claims it). A VHDS fetch goes to the earliest-sent such request.
func (o *onDemandTally) probe(e xdslog.Event) {
	if e.SentTS == nil {
		return
	}
	sent := *e.SentTS
	inFlight := func(f *Fetch) bool { return !sent.After(f.Subscribed) && !e.TS.Before(f.Subscribed) }
	claim := func(f *Fetch) {
		f.sent, f.answered = sent, e.TS
		f.RequestID, f.Host, f.Status, f.Backend = e.RequestID, e.Host, e.Status, e.Backend
	}
	if e.Host != "" {
		for _, f := range o.byHost[strings.ToLower(e.Host)] {
			if inFlight(f) && (f.sent.IsZero() || sent.Before(f.sent)) {
				claim(f)
			}
		}
	}
	o.cds = slices.DeleteFunc(o.cds, func(f *Fetch) bool {
		if inFlight(f) {
			claim(f)
			return true
		}
		return false
	})
}

// onDemand returns the step's on-demand figures, created on first use.
func (st *Step) onDemand() *OnDemand {
	if st.OnDemand == nil {
		st.OnDemand = &OnDemand{Subscribes: map[string]int{}}
	}
	return st.OnDemand
}

// onDemandFrom is a copy of the step's on-demand figures with each fetch's ms computed.
func (st *Step) onDemandFrom() *OnDemand {
	if st.OnDemand == nil {
		return nil
	}
	out := &OnDemand{Subscribes: maps.Clone(st.OnDemand.Subscribes), Available: maps.Clone(st.OnDemand.Available),
		Fetches: make([]Fetch, 0, len(st.fetches))}
	for _, f := range st.fetches {
		c := *f
		if f.Responded != nil {
			ts := *f.Responded
			c.Responded = &ts
		}
		if !f.sent.IsZero() {
			c.SubscribeMS = msPtr(f.sent, f.Subscribed)
			if f.Responded != nil {
				c.ResponseMS = msPtr(f.sent, *f.Responded)
			}
			c.AnswerMS = msPtr(f.sent, f.answered)
		}
		out.Fetches = append(out.Fetches, c)
	}
	return out
}

// msPtr is msSince as a figure that may be absent.
func msPtr(from, to time.Time) *float64 {
	ms := msSince(from, to)
	return &ms
}
