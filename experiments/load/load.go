// Package load is steady traffic through the data plane while a scenario runs: a
// constant-rate generator (vegeta, used as a library) over C connections, HTTP/1.1
// keep-alive or HTTP/2 with prior knowledge (h2c), each request with its own
// x-request-id. Every response is kept, never dropped, with when it was sent, its
// latency, status, request ID (echoed by Envoy) and the backend its body names, so that
// a run can attribute it to a step, a backend and (with Envoy's access log) a response
// flag. Load never makes the evidence lie: when the generator cannot keep its rate the
// achieved rate says so.
package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/xds-workbench/lab/shared/loopback"
)

// Protocol is how the generator talks to the listener.
type Protocol string

const (
	// HTTP1 is HTTP/1.1 with keep-alive: each connection carries one request at a time.
	HTTP1 Protocol = "http1"
	// HTTP2 is HTTP/2 with prior knowledge (h2c): each connection multiplexes streams.
	HTTP2 Protocol = "http2"
)

// Bounds: load is for a 2-core laptop and one Envoy on loopback, not a benchmark farm.
// MaxRate is above what one Envoy worker sustains here while changes land (8,000/s,
// docs/running.md), so that lab sweep can find the limit.
const (
	MaxRate        = 20000
	MaxConnections = 64
	MaxDuration    = 10 * time.Minute
	// DefaultTimeout bounds one request.
	DefaultTimeout = 3 * time.Second
	// maxResponses bounds what one generator keeps (MaxRate x MaxDuration would be 12M);
	// a run lets go of every step it counted (Forget), so only a step longer than 50 s at
	// the highest rate reaches it, and what is past it is counted as overflow.
	maxResponses = 1_000_000
)

// Options configure a generator.
type Options struct {
	// Rate is requests per second, constant, over all connections.
	Rate        int
	Connections int
	Protocol    Protocol
	// Target is the URL requests go to; only loopback hosts are accepted.
	Target string
	// Header is sent with every request (x-request-id is set per request).
	Header http.Header
	// Timeout bounds one request (DefaultTimeout when 0).
	Timeout time.Duration
	// IDPrefix starts every request ID ("load" when empty).
	IDPrefix string
	// Duration bounds the load (MaxDuration when 0, at most MaxDuration).
	Duration time.Duration
}

// ParseProtocol validates a --protocol value.
func ParseProtocol(s string) (Protocol, error) {
	switch Protocol(s) {
	case HTTP1, HTTP2:
		return Protocol(s), nil
	case "":
		return HTTP1, nil
	}
	return "", fmt.Errorf("unknown protocol %q (want http1 or http2)", s)
}

// Check refuses absurd or non-loopback options in one line, before anything starts.
func (o Options) Check() error {
	if o.Rate < 1 || o.Rate > MaxRate {
		return fmt.Errorf("load rate %d: want 1..%d requests per second", o.Rate, MaxRate)
	}
	if o.Connections < 1 || o.Connections > MaxConnections {
		return fmt.Errorf("load connections %d: want 1..%d", o.Connections, MaxConnections)
	}
	if o.Connections > o.Rate {
		return fmt.Errorf("load connections %d: more than the rate (%d per second); each connection needs at least one request per second", o.Connections, o.Rate)
	}
	if _, err := ParseProtocol(string(o.Protocol)); err != nil {
		return err
	}
	u, err := url.Parse(o.Target)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("load target %q: want http://127.0.0.1:PORT/PATH", o.Target)
	}
	if u.Hostname() != loopback.Host {
		return fmt.Errorf("load target %q: only %s is allowed", o.Target, loopback.Host)
	}
	if o.Timeout < 0 {
		return fmt.Errorf("load timeout %s: must not be negative", o.Timeout)
	}
	if o.Duration < 0 || o.Duration > MaxDuration {
		return fmt.Errorf("load duration %s: want 0..%s", o.Duration, MaxDuration)
	}
	return nil
}

// Response is one request's outcome.
type Response struct {
	// ID is the request's x-request-id.
	ID string `json:"id"`
	// Conn numbers the connection (generator) that sent it, from 0.
	Conn int `json:"conn"`
	// Sent is when the request was sent; Latency how long the answer took.
	Sent    time.Time     `json:"sent"`
	Latency time.Duration `json:"latency_ns"`
	// Status is the HTTP status, 0 when there was no answer (Error says why).
	Status int    `json:"status"`
	Error  string `json:"error,omitempty"`
	// Backend is the backend the body names ("" when none).
	Backend string `json:"backend,omitempty"`
}

// OK says the request succeeded (a 2xx answer).
func (r Response) OK() bool { return r.Status >= 200 && r.Status < 300 }

// Done is when the answer (or the failure) arrived.
func (r Response) Done() time.Time { return r.Sent.Add(r.Latency) }

// Generator is a running load.
type Generator struct {
	o        Options
	started  time.Time
	attacks  []*vegeta.Attacker
	conns    []*http.Transport
	done     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	resps    []Response
	overflow int
	stopOnce sync.Once
	stopped  time.Time
	// stopAsked is when Stop told the pacers to stop: from then on a connection sends at
	// most the one request whose tick it already held.
	stopAsked time.Time
	// ended is when the last connection stopped sending (by Stop, or at MaxDuration).
	ended time.Time
	// stopping tells the pacers to stop (set by Stop before the attackers' own Stop).
	stopping atomic.Bool
	// issued counts requests handed to the transport, done those answered (or failed), so
	// a step can wait for every request it sent before it is summarized.
	issued, answered atomic.Int64
}

// Start begins sending at o.Rate, split evenly over o.Connections generators, each with
// its own client and one connection, until Stop or ctx ends (at most MaxDuration).
func Start(ctx context.Context, o Options) (*Generator, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	if o.Protocol == "" {
		o.Protocol = HTTP1
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.IDPrefix == "" {
		o.IDPrefix = "load"
	}
	if o.Duration == 0 {
		o.Duration = MaxDuration
	}
	g := &Generator{o: o, started: time.Now(), done: make(chan struct{})}
	for c := range o.Connections {
		// An even split of the rate: connection c sends (Rate+c)/C per second, so the sum
		// is exactly Rate.
		rate := (o.Rate + c) / o.Connections
		tr := transport(o)
		client := &http.Client{Transport: tr, Timeout: o.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		a := vegeta.NewAttacker(vegeta.Client(client), vegeta.MaxBody(1<<14))
		g.attacks, g.conns = append(g.attacks, a), append(g.conns, tr)
		// Connection c starts c/Rate seconds late, so the connections' requests interleave
		// evenly (one every 1/Rate) instead of all C at once: the time resolution of a
		// move is then 1/Rate, not C/Rate.
		pace := offsetPacer{ConstantPacer: vegeta.ConstantPacer{Freq: rate, Per: time.Second},
			offset: time.Duration(c) * time.Second / time.Duration(o.Rate), stopping: &g.stopping}
		results := a.Attack(g.targeter(c), pace, o.Duration, fmt.Sprintf("conn-%d", c))
		g.wg.Add(1)
		go g.collect(c, results)
	}
	go func() {
		select {
		case <-ctx.Done():
			g.Stop()
		case <-g.done:
		}
	}()
	go func() {
		// Every attack ends by itself after Duration; a Stop may not have come.
		g.wg.Wait()
		g.mu.Lock()
		g.ended = time.Now()
		g.mu.Unlock()
	}()
	return g, nil
}

// offsetPacer is a constant pace that starts offset late, and stops as soon as stopping
// is set: vegeta's Attacker.Stop races a waiting worker's next tick in a select, so
// without it a connection may go on sending for several periods after Stop.
type offsetPacer struct {
	vegeta.ConstantPacer
	offset   time.Duration
	stopping *atomic.Bool
}

func (p offsetPacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if p.stopping.Load() {
		return 0, true
	}
	if elapsed < p.offset {
		return p.offset - elapsed, false
	}
	return p.ConstantPacer.Pace(elapsed-p.offset, hits)
}

// transport is one generator's connection: one at most, kept alive, HTTP/1.1 or HTTP/2
// with prior knowledge (net/http's own unencrypted HTTP/2, so Stop can close it).
func transport(o Options) *http.Transport {
	p := new(http.Protocols)
	if o.Protocol == HTTP2 {
		p.SetUnencryptedHTTP2(true)
	} else {
		p.SetHTTP1(true)
	}
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: o.Timeout}).DialContext,
		MaxConnsPerHost:     1,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
		Protocols:           p,
	}
}

// targeter gives connection c's requests their IDs: PREFIX-c-N.
func (g *Generator) targeter(c int) vegeta.Targeter {
	var mu sync.Mutex
	n := 0
	return func(t *vegeta.Target) error {
		// A tick vegeta handed a worker before Stop, or one its loop sends while Stop
		// closes it (its select may take either), must not become a request: the
		// worker asks for its target first, and collect drops the refusal.
		if g.stopping.Load() {
			return errStopped
		}
		mu.Lock()
		n++
		id := fmt.Sprintf("%s-%d-%d", g.o.IDPrefix, c, n)
		mu.Unlock()
		g.issued.Add(1)
		t.Method, t.URL = http.MethodGet, g.o.Target
		t.Header = g.o.Header.Clone()
		if t.Header == nil {
			t.Header = http.Header{}
		}
		t.Header.Set("x-request-id", id)
		return nil
	}
}

// quote is the part of an inventory backend's body that names it.
type quote struct {
	Backend   string `json:"backend"`
	RequestID string `json:"request_id"`
}

// errStopped is the targeter's refusal after Stop: no request was sent, so collect
// keeps no response for it.
var errStopped = errors.New("load stopped")

func (g *Generator) collect(c int, results <-chan *vegeta.Result) {
	defer g.wg.Done()
	for res := range results {
		if res.Error == errStopped.Error() {
			continue
		}
		r := Response{Conn: c, Sent: res.Timestamp, Latency: res.Latency, Status: int(res.Code), Error: res.Error}
		r.ID = res.Headers.Get("x-request-id")
		var q quote
		if json.Unmarshal(res.Body, &q) == nil {
			r.Backend = q.Backend
			if r.ID == "" {
				r.ID = q.RequestID
			}
		}
		g.mu.Lock()
		if len(g.resps) < maxResponses {
			g.resps = append(g.resps, r)
		} else {
			g.overflow++
		}
		g.mu.Unlock()
		g.answered.Add(1)
	}
}

// Settle waits until every request issued so far has its response (answered, failed or
// timed out: at most the request timeout), so that a window ending now loses none.
func (g *Generator) Settle(ctx context.Context) error {
	want := g.issued.Load()
	deadline := time.Now().Add(g.o.Timeout + time.Second)
	for g.answered.Load() < want {
		if time.Now().After(deadline) {
			return fmt.Errorf("load: %d of %d requests still unanswered after %s", want-g.answered.Load(), want, g.o.Timeout+time.Second)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// Stop ends the load, waits for every request in flight, and returns every response in
// the order they were sent. It is idempotent.
func (g *Generator) Stop() []Response {
	g.stopOnce.Do(func() {
		g.stopping.Store(true)
		g.stopAsked = time.Now()
		for _, a := range g.attacks {
			a.Stop()
		}
		g.wg.Wait()
		for _, tr := range g.conns {
			tr.CloseIdleConnections()
		}
		g.stopped = time.Now()
		close(g.done)
	})
	g.wg.Wait()
	return g.Responses()
}

// Responses returns the responses so far, ordered by when they were sent.
func (g *Generator) Responses() []Response {
	g.mu.Lock()
	out := make([]Response, len(g.resps))
	copy(out, g.resps)
	g.mu.Unlock()
	sortBySent(out)
	return out
}

// Expired says the load ended at its Duration bound rather than by Stop: every
// request it sent is still counted, but it sends no more.
func (g *Generator) Expired() bool {
	select {
	case <-g.done:
		return false
	default:
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.ended.IsZero()
}

// Forget lets go of the responses sent before t: a run counts each step once, so what
// was sent before the step in progress is no longer needed, and a long run stays within
// the generator's bound.
func (g *Generator) Forget(t time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	kept := g.resps[:0]
	for _, r := range g.resps {
		if !r.Sent.Before(t) {
			kept = append(kept, r)
		}
	}
	clear(g.resps[len(kept):])
	g.resps = kept
}

// Overflow counts responses past the bound that were counted but not kept.
func (g *Generator) Overflow() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.overflow
}

// Stopped is closed once the load has ended (Stop, or its context) and every request
// in flight has its response.
func (g *Generator) Stopped() <-chan struct{} { return g.done }

// Options returns what the generator runs with.
func (g *Generator) Options() Options { return g.o }

// ErrNoResponses is returned by a summary of an empty window.
var ErrNoResponses = errors.New("no responses in the window")

// Answer names a response as the traffic counts it: the backend that answered a
// success ("v1", "?" when the body names none), or the failure: "503 NC" (status and
// Envoy's response flag), "503" without a flag, "0 timeout", "0 refused",
// "0 no-response". flag is Envoy's response flag for the request ("" when unknown).
func Answer(r Response, flag string) string {
	if r.OK() {
		if r.Backend == "" {
			return "?"
		}
		return r.Backend
	}
	if r.Status == 0 {
		e := strings.ToLower(r.Error)
		switch {
		case strings.Contains(e, "timeout") || strings.Contains(e, "deadline"):
			return "0 timeout"
		case strings.Contains(e, "refused"):
			return "0 refused"
		}
		return "0 no-response"
	}
	if flag != "" && flag != "-" {
		return fmt.Sprintf("%d %s", r.Status, flag)
	}
	return fmt.Sprint(r.Status)
}
