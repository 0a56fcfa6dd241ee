package client

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/xds-workbench/lab/shared/scenario"
)

// heldProber sends plain HTTP/1.1 requests on the run's one kept-alive connection to
// Envoy's listener (scenario.Request.Held without TLS): what a connection opened before
// a listener change gets while the old listener or filter chain drains. A draining HTTP
// connection manager answers HTTP/1.1 with Connection: close (Envoy's
// conn_manager_impl.cc, encodeHeaders; the decision is DrainManagerImpl::drainClose).
// After such an answer the connection is gone, so the next request opens a new held
// connection and is numbered 1 on it; any other change of connection shows as a
// request after the first that was not reused.
type heldProber struct {
	mu     sync.Mutex
	client *http.Client
	n      int
	closed bool
}

// next is the held client, made on first use, and the request's number on its
// connection.
func (p *heldProber) next() (*http.Client, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client == nil {
		p.client = &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{
			MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1, IdleConnTimeout: time.Hour}}
	}
	if p.closed {
		p.n, p.closed = 0, false
	}
	p.n++
	return p.client, p.n
}

// probe sends one request on the held connection and records whether it was reused and
// whether the answer closed it.
func (p *heldProber) probe(ctx context.Context, addr string, q scenario.Request, requestID string) Observation {
	c, n := p.next()
	ts := &traceState{}
	o, _, ok := sendHTTP(httptrace.WithClientTrace(ctx, ts.trace()), c, addr, q, requestID)
	ts.mu.Lock()
	o.Held, o.Reused, o.Conn = n, ts.reused, ts.conn
	ts.mu.Unlock()
	if !ok {
		p.mu.Lock()
		p.closed = true // a failed request leaves no connection to keep
		p.mu.Unlock()
		return o
	}
	if o.ConnClose {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
	}
	return o
}
