package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/inventory"
	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/resources"
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
}

// Backend returns who answered: the backend's own log when present, else the body.
func (o Observation) Backend() string {
	if o.LogBackend != "" {
		return o.LogBackend
	}
	return o.BodyBackend
}

// proxy is the data plane under test: real Envoy or the simulated client.
type proxy interface {
	Kind() string // "envoy" or "simulated"
	Start(ctx context.Context) error
	// Stop ends the proxy cleanly (Envoy: /quitquitquit).
	Stop(ctx context.Context) error
	Request(ctx context.Context, requestID string) Observation
	// Evidence returns the proxy's own view (Envoy stats and config dump); nil for the
	// simulated client.
	Stats(ctx context.Context) (map[string]string, error)
	ConfigDump(ctx context.Context) ([]byte, error)
	// Exited is closed when the proxy process dies.
	Exited() <-chan struct{}
}

// envoyProxy runs real Envoy with the mode's bootstrap.
type envoyProxy struct {
	bin          envoy.Binary
	bootstrap    string
	logPath      string
	accessLog    string
	listenerPort int
	backends     []*inventory.Backend
	http         *http.Client

	mu   sync.Mutex
	proc *envoy.Process
}

func newEnvoyProxy(bin envoy.Binary, mode, dir, xdsAddr string, adminPort, listenerPort int, backends []*inventory.Backend) (*envoyProxy, error) {
	cfg, err := bootstrap.Render(mode, bootstrap.Params{XDSAddr: xdsAddr, AdminPort: adminPort})
	if err != nil {
		return nil, fmt.Errorf("render %s bootstrap: %w", mode, err)
	}
	path := filepath.Join(dir, "bootstrap.yaml")
	if err := writeFileAtomic(path, cfg); err != nil {
		return nil, err
	}
	return &envoyProxy{
		bin: bin, bootstrap: path, logPath: filepath.Join(dir, "envoy.log"), accessLog: filepath.Join(dir, "access.log"),
		listenerPort: listenerPort, backends: backends,
		http: &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
	}, nil
}

func (e *envoyProxy) Kind() string { return "envoy" }

func (e *envoyProxy) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, err := envoy.Start(ctx, envoy.Options{Binary: e.bin, ConfigPath: e.bootstrap, LogPath: e.logPath, ExtraArgs: []string{"--concurrency", "1"}})
	if err != nil {
		return fmt.Errorf("start envoy: %w", err)
	}
	e.proc = p
	return nil
}

func (e *envoyProxy) process() *envoy.Process {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.proc
}

func (e *envoyProxy) Stop(ctx context.Context) error {
	p := e.process()
	if p == nil {
		return nil
	}
	return p.Stop(ctx)
}

// Kill ends Envoy with SIGKILL (fault tests).
func (e *envoyProxy) Kill() error {
	p := e.process()
	if p == nil {
		return errors.New("envoy is not running")
	}
	return p.Kill()
}

func (e *envoyProxy) Exited() <-chan struct{} {
	if p := e.process(); p != nil {
		return p.Exited()
	}
	return nil
}

func (e *envoyProxy) Stats(ctx context.Context) (map[string]string, error) {
	p := e.process()
	if p == nil {
		return nil, errors.New("envoy is not running")
	}
	return p.Stats(ctx)
}

func (e *envoyProxy) ConfigDump(ctx context.Context) ([]byte, error) {
	p := e.process()
	if p == nil {
		return nil, errors.New("envoy is not running")
	}
	return p.ConfigDump(ctx, true)
}

func (e *envoyProxy) Request(ctx context.Context, requestID string) Observation {
	path := resources.QuotePath + "?sku=paper"
	o := Observation{RequestID: requestID, Path: path, At: time.Now().UTC().Format(time.RFC3339Nano)}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+loopback.Addr(e.listenerPort)+path, nil)
	if err != nil {
		o.Error = err.Error()
		return o
	}
	req.Header.Set("x-request-id", requestID)
	resp, err := e.http.Do(req)
	if err != nil {
		o.Error = err.Error()
		return o
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	o.Status = resp.StatusCode
	var q inventory.Quote
	if json.Unmarshal(body, &q) == nil && q.Backend != "" && q.RequestID == requestID {
		o.BodyBackend = q.Backend
	}
	for _, b := range e.backends {
		if _, ok, _ := b.Lookup(requestID); ok {
			o.LogBackend = b.Name()
		}
	}
	// The access log is flushed every 100 ms (--file-flush-interval-msec); wait for it.
	actx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if a, err := envoy.WaitAccess(actx, e.accessLog, requestID); err == nil {
		o.Access = &a
		o.Flags = a.Flags
		o.Upstream = a.UpstreamHost
	}
	return o
}

// simProxy is the simulated client: its data plane is computed, never forwarded.
type simProxy struct {
	mode     string
	xdsAddr  string
	client   *simclient.Client
	backends []*inventory.Backend

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	exited chan struct{}
}

func newSimProxy(mode, xdsAddr string, backends []*inventory.Backend) (*simProxy, error) {
	c, err := simclient.New(mode, resources.NodeID)
	if err != nil {
		return nil, err
	}
	return &simProxy{mode: mode, xdsAddr: xdsAddr, client: c, backends: backends, exited: make(chan struct{})}, nil
}

func (s *simProxy) Kind() string { return "simulated" }

// Start runs the client with reconnects, like Envoy: when the stream breaks it dials
// again with a short backoff, keeping what it accepted.
func (s *simProxy) Start(ctx context.Context) error {
	conn, err := grpc.NewClient("passthrough:///"+s.xdsAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("dial %s: %w", s.xdsAddr, err)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	s.mu.Lock()
	s.cancel, s.done = cancel, done
	s.mu.Unlock()
	go func() {
		defer close(done)
		defer conn.Close()
		backoff := 100 * time.Millisecond
		for rctx.Err() == nil {
			_ = s.client.Run(rctx, conn)
			select {
			case <-rctx.Done():
			case <-time.After(backoff):
			}
		}
	}()
	return nil
}

func (s *simProxy) Stop(context.Context) error {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.cancel = nil
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	return nil
}

func (s *simProxy) Exited() <-chan struct{} { return s.exited }

func (s *simProxy) Stats(context.Context) (map[string]string, error) { return nil, nil }

func (s *simProxy) ConfigDump(context.Context) ([]byte, error) { return nil, nil }

func (s *simProxy) Request(_ context.Context, requestID string) Observation {
	o := Observation{RequestID: requestID, Path: resources.QuotePath + "?sku=paper", At: time.Now().UTC().Format(time.RFC3339Nano), Simulated: true}
	r := s.client.Route(o.Path)
	o.Status = r.Status
	if r.Status == 0 {
		o.Error = "simulated: no listener accepted"
	}
	if r.Flags != "-" {
		o.Flags = r.Flags
	}
	o.Upstream = r.Endpoint
	if i := strings.LastIndexByte(r.Endpoint, ':'); i >= 0 {
		port, _ := strconv.Atoi(r.Endpoint[i+1:])
		for _, b := range s.backends {
			if b.Port() == port {
				o.BodyBackend = b.Name()
			}
		}
	}
	return o
}

// writeFileAtomic writes to a temporary name in the same directory and renames it, so a
// crash never leaves a half-written file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename %s: %w", path, err)
	}
	return nil
}

func writeJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return writeFileAtomic(path, append(b, '\n'))
}
