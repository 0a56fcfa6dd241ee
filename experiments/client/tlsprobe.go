package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"syscall"
	"time"

	"github.com/xds-workbench/lab/shared/certs"
	"github.com/xds-workbench/lab/shared/scenario"
)

// tlsProber sends the TLS probes to Envoy's listener: each on a fresh connection (a new
// handshake, so it shows the certificate the listener presents now), or on the one
// kept-alive connection held across the run (what a connection opened before a change
// keeps: Envoy's sockets keep the context they were built with, server_ssl_socket.cc,
// ServerSslSocketFactory::createDownstreamTransportSocket).
type tlsProber struct {
	roots *x509.CertPool

	mu    sync.Mutex
	held  *http.Client
	holds int
}

func newTLSProber(roots *x509.CertPool) *tlsProber { return &tlsProber{roots: roots} }

func (p *tlsProber) config() *tls.Config {
	return &tls.Config{RootCAs: p.roots, MinVersion: tls.VersionTLS12}
}

// fresh is a client that opens a new connection (and handshake) per request.
func (p *tlsProber) fresh() *http.Client {
	return &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: p.config()}}
}

// heldClient is the one kept-alive connection's client, made on first use; n numbers
// the request on it.
func (p *tlsProber) heldClient() (c *http.Client, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: p.config(),
			MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1, IdleConnTimeout: time.Hour}}
	}
	p.holds++
	return p.held, p.holds
}

// probe sends one HTTPS request to addr and records the handshake's evidence.
func (p *tlsProber) probe(ctx context.Context, addr string, q scenario.Request, requestID string) Observation {
	o := Observation{RequestID: requestID, Path: q.Path, Host: q.Host, TLS: true, At: time.Now().UTC().Format(time.RFC3339Nano)}
	c := p.fresh()
	if q.Held {
		c, o.Held = p.heldClient()
	}
	ts := &traceState{}
	trace := ts.trace()
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, "https://"+addr+q.Path, nil)
	if err != nil {
		o.Error, o.Class = err.Error(), ClassNoResponse
		return o
	}
	for k, v := range q.Headers {
		req.Header.Set(k, v)
	}
	if q.Host != "" {
		req.Host = q.Host
	}
	req.Header.Set("x-request-id", requestID)
	o.Sent = time.Now().UTC()
	resp, err := c.Do(req)
	ts.mu.Lock()
	o.Reused, o.Conn = ts.reused, ts.conn
	connectErr, handshook, handshakeErr := ts.connectErr, ts.handshook, ts.handshakeErr
	ts.mu.Unlock()
	if err != nil {
		o.Error, o.Class = err.Error(), ClassNoResponse
		o.Handshake = handshakeOutcome(connectErr, handshook, handshakeErr)
		return o
	}
	readAnswer(&o, resp, requestID)
	o.Handshake = scenario.HandshakeOK
	if st := resp.TLS; st != nil && len(st.PeerCertificates) > 0 {
		o.CertSerial, o.CertCN = certs.Describe(st.PeerCertificates[0])
	}
	return o
}

// traceState is what the request's trace saw. The transport calls the dial hooks from
// its dialing goroutine, which can outlive the request (a dial it no longer needs), so
// every field is read and written under mu.
type traceState struct {
	mu           sync.Mutex
	connectErr   error
	handshook    bool
	handshakeErr error
	reused       bool
	conn         string
}

func (ts *traceState) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		ConnectDone: func(_, _ string, err error) {
			ts.mu.Lock()
			defer ts.mu.Unlock()
			ts.connectErr = err
		},
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			ts.mu.Lock()
			defer ts.mu.Unlock()
			ts.handshook, ts.handshakeErr = true, err
		},
		GotConn: func(info httptrace.GotConnInfo) {
			ts.mu.Lock()
			defer ts.mu.Unlock()
			ts.reused = info.Reused
			if info.Conn != nil {
				ts.conn = info.Conn.LocalAddr().String()
			}
		},
	}
}

// handshakeOutcome names how a failed TLS request failed: refused (no listening
// socket: a warming listener's port is bound but not listened on, listener_impl.cc), reset
// (the listener closed the connection during the handshake: Envoy's NotReadySslSocket
// for a listener without its SDS certificate), failed (anything else, e.g. a certificate
// the run's CA did not sign).
func handshakeOutcome(connectErr error, handshook bool, handshakeErr error) string {
	switch {
	case connectErr != nil && errors.Is(connectErr, syscall.ECONNREFUSED):
		return scenario.HandshakeRefused
	case connectErr != nil:
		return scenario.HandshakeFailed
	case handshook && (errors.Is(handshakeErr, io.EOF) || errors.Is(handshakeErr, syscall.ECONNRESET) || errors.Is(handshakeErr, io.ErrUnexpectedEOF)):
		return scenario.HandshakeReset
	case handshook && handshakeErr == nil:
		return scenario.HandshakeOK // the HTTP exchange failed after it
	}
	return scenario.HandshakeFailed
}

// readAnswer fills o from the response: status, and the backend its body names.
func readAnswer(o *Observation, resp *http.Response, requestID string) {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	o.Answered = time.Now().UTC()
	o.Status = resp.StatusCode
	o.BodyBackend = bodyBackend(body, requestID)
	o.Class = Classify(o.Status, "")
}
