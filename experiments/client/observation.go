package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/inventory"
	"github.com/xds-workbench/lab/shared/scenario"
)

// Observation is one request through the data plane, with every piece of evidence that
// names who answered it.
type Observation struct {
	RequestID string `json:"request_id"`
	Path      string `json:"path"`
	At        string `json:"at"`
	// Status is the HTTP status (0 when the connection failed).
	Status int    `json:"status"`
	Error  string `json:"error,omitempty"`
	// BodyBackend is the backend named in the response body.
	BodyBackend string `json:"body_backend,omitempty"`
	// LogBackend is the backend whose own request log has this request ID.
	LogBackend string `json:"log_backend,omitempty"`
	// Access is Envoy's access-log line for this request ID.
	Access *envoy.AccessEntry `json:"access_log,omitempty"`
	Flags  string             `json:"flags,omitempty"`
	// Upstream is the endpoint that served the request (Envoy's %UPSTREAM_HOST%, or the
	// simulated client's computed endpoint).
	Upstream string `json:"upstream,omitempty"`
	// Simulated is true when no proxy forwarded anything: the result was computed from the
	// simulated client's accepted configuration.
	Simulated bool `json:"simulated"`
	// Client is the real client that carried the request ("envoy", "grpc"; "" for the
	// simulated client and in evidence written before grpc runs existed, all Envoy's).
	Client string `json:"client,omitempty"`
	// GRPCStatus and GRPCMessage are the RPC's status through the grpc client's front
	// door ("OK", "Unavailable" and grpc-go's own reason).
	GRPCStatus  string `json:"grpc_status,omitempty"`
	GRPCMessage string `json:"grpc_message,omitempty"`
	// Host is the Host the request was sent with ("" for the listener's address).
	Host string `json:"host,omitempty"`
	// Sent is when the request was sent; Answered when the response (or the failure)
	// arrived, before the evidence lookups that follow it; data-plane timings are
	// measured between them.
	Sent     time.Time `json:"sent"`
	Answered time.Time `json:"answered"`
	// TLS evidence (a request with scenario.Request.TLS): the serial (decimal) and
	// common name of the certificate the listener's handshake presented, and how the
	// handshake went (Handshake: ok, reset when the listener closed the connection during
	// it, refused when the port was not open, failed otherwise).
	TLS        bool   `json:"tls,omitempty"`
	CertSerial string `json:"cert_serial,omitempty"`
	CertCN     string `json:"cert_cn,omitempty"`
	Handshake  string `json:"handshake,omitempty"`
	// Held is the n-th request (from 1) sent on the run's one kept-alive connection
	// (scenario.Request.Held); Reused says the request went on a connection opened
	// before it, and Conn names that connection by its client-side address.
	Held   int    `json:"held,omitempty"`
	Reused bool   `json:"reused,omitempty"`
	Conn   string `json:"conn,omitempty"`
	// ConnClose says a plain HTTP answer carried Connection: close (on the held
	// connection: a draining listener or filter chain, heldProber).
	ConnClose bool `json:"conn_close,omitempty"`
	// Class says what kind of answer this was (Classify): served, upstream failure,
	// config failure, other failure or no response. Envoy's is read from its response
	// flags, the grpc client's from grpc-go's status message (grpcClass).
	Class string `json:"class"`
}

// Classes of a data-plane answer (Observation.Class).
const (
	// ClassServed: a backend answered (no Envoy response flag).
	ClassServed = "served"
	// ClassUpstreamFailure: the configuration routed the request, but the upstream
	// failed (UF refused, UH no healthy host, URX retries exhausted, ...). Not a
	// control-plane problem.
	ClassUpstreamFailure = "upstream failure"
	// ClassConfigFailure: the proxy's configuration could not route the request (NC no
	// cluster, NR no route, NFCF no filter config).
	ClassConfigFailure = "config failure"
	// ClassOther: an error status without a flag that says whose fault it was.
	ClassOther = "other failure"
	// ClassNoResponse: no HTTP answer at all (the proxy is down or not listening).
	ClassNoResponse = "no response"
)

// Envoy response flags by whose fault they are.
var (
	configFlags   = map[string]bool{"NC": true, "NR": true, "NFCF": true}
	upstreamFlags = map[string]bool{"UF": true, "UH": true, "URX": true, "UO": true, "UT": true, "UR": true, "UC": true, "LH": true, "DF": true, "UMSDR": true}
)

// Classify names the kind of a data-plane answer from its status and Envoy response
// flags (comma-separated when several). A config flag wins over an upstream flag.
func Classify(status int, flags string) string {
	if status == 0 {
		return ClassNoResponse
	}
	var upstream bool
	for _, f := range strings.Split(flags, ",") {
		f = strings.TrimSpace(f)
		if configFlags[f] {
			return ClassConfigFailure
		}
		upstream = upstream || upstreamFlags[f]
	}
	switch {
	case upstream:
		return ClassUpstreamFailure
	case status >= 500:
		return ClassOther
	}
	return ClassServed
}

// Backend returns who answered: the backend's own log when present, else the body.
func (o Observation) Backend() string {
	if o.LogBackend != "" {
		return o.LogBackend
	}
	return o.BodyBackend
}

// sendHTTP sends one request to a data plane's HTTP listener at addr and reads the
// answer, its headers and the backend its body names.
func sendHTTP(ctx context.Context, client *http.Client, addr string, q scenario.Request, requestID string) (Observation, http.Header, bool) {
	o := Observation{RequestID: requestID, Path: q.Path, Host: q.Host, At: time.Now().UTC().Format(time.RFC3339Nano)}
	if addr == "" {
		o.Error = "the data plane is not running"
		o.Class = ClassNoResponse
		return o, nil, false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+q.Path, nil)
	if err != nil {
		o.Error = err.Error()
		o.Class = ClassNoResponse
		return o, nil, false
	}
	for k, v := range q.Headers {
		req.Header.Set(k, v)
	}
	if q.Host != "" {
		req.Host = q.Host
	}
	req.Header.Set("x-request-id", requestID)
	o.Sent = time.Now().UTC()
	resp, err := client.Do(req)
	if err != nil {
		o.Error = err.Error()
		o.Class = ClassNoResponse
		return o, nil, false
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	o.Answered = time.Now().UTC()
	o.Status = resp.StatusCode
	o.BodyBackend = bodyBackend(body, requestID)
	o.Class = Classify(o.Status, "")
	// Go's transport takes Connection: close out of the header and says it in Close.
	o.ConnClose = resp.Close
	return o, resp.Header, true
}

// bodyBackend is the backend an inventory answer's body names, when it answers
// requestID ("" otherwise).
func bodyBackend(body []byte, requestID string) string {
	var quote inventory.Quote
	if json.Unmarshal(body, &quote) == nil && quote.Backend != "" && quote.RequestID == requestID {
		return quote.Backend
	}
	return ""
}

// grpcFailures are grpc-go's own words (v1.85.0) for an RPC the xDS channel could not
// send, by whose fault it is: the configuration could not route it (Envoy's NC, NR) or
// the route's cluster had nothing to send it to (Envoy's UH, UF).
var grpcFailures = []struct{ words, class string }{
	// internal/xds/clients/xdsclient/authority.go (handleADSResourceUpdate,
	// handleADSResourceDoesNotExist, watchResource): a watched resource removed or never sent, e.g.
	// the route's cluster: `xds: resource "inventory" of type "ClusterResource" has
	// been removed`.
	{"has been removed", ClassConfigFailure},
	// internal/xds/resolver/serviceconfig.go errNoMatchedRouteFound,
	// errUnsupportedClientRouteAction.
	{"no matched route was found", ClassConfigFailure},
	{"matched route does not have a supported route action", ClassConfigFailure},
	// internal/xds/balancer/clustermanager/picker.go: the route's cluster is not in the
	// channel's config.
	{"unknown cluster selected for RPC", ClassConfigFailure},
	// balancer/weightedtarget/weightedaggregator/aggregator.go: no locality to pick from
	// (an assignment without endpoints); internal/xds/balancer/priority
	// ErrAllPrioritiesRemoved; balancer/ringhash "produced zero addresses".
	{"no targets to pick from", ClassUpstreamFailure},
	{"all priorities are removed", ClassUpstreamFailure},
	{"produced zero addresses", ClassUpstreamFailure},
	// The transport's failure to reach the endpoint (internal/transport/transport.go
	// ConnectionError "connection error: desc = ...", balancer/base "last connection
	// error", a refused dial).
	{"connection error", ClassUpstreamFailure},
	{"connection refused", ClassUpstreamFailure},
}

// grpcClass is the class (Observation.Class) of an answer through the grpc client's
// front door, from the RPC's status code name and message: OK is served; a failure
// grpc-go names (grpcFailures) is its class; any other is ClassOther.
func grpcClass(code, message string) string {
	if code == codes.OK.String() {
		return ClassServed
	}
	for _, f := range grpcFailures {
		if strings.Contains(message, f.words) {
			return f.class
		}
	}
	return ClassOther
}

// holdProcess stops pid with SIGSTOP; the release sends SIGCONT once.
func holdProcess(what string, pid int) (func() error, error) {
	if err := sigstop(pid); err != nil {
		return nil, fmt.Errorf("hold: SIGSTOP %s pid %d: %w", what, pid, err)
	}
	var once sync.Once
	return func() (err error) {
		once.Do(func() {
			if e := sigcont(pid); e != nil {
				err = fmt.Errorf("release: SIGCONT %s pid %d: %w", what, pid, e)
			}
		})
		return err
	}, nil
}

// NewHTTPClient is the HTTP client of the data-plane requests: a fresh connection
// per request, so each one is routed anew.
func NewHTTPClient() *http.Client {
	return &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
}

func sigstop(pid int) error { return syscall.Kill(pid, syscall.SIGSTOP) }

// sigcont continues pid; one that is gone meanwhile is not an error.
func sigcont(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
