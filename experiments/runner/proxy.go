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
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/inventory"
	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
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

// proxy is the data plane under test: real Envoy, grpc-go's client, or the simulated
// client.
type proxy interface {
	Kind() string // "envoy", "grpc" or "simulated"
	Start(ctx context.Context) error
	// Stop ends the proxy cleanly (Envoy: /quitquitquit).
	Stop(ctx context.Context) error
	// Crash ends the proxy at once and returns when it is gone (Envoy: SIGKILL; the
	// simulated client, which has no process: its stream is cut and what it accepted is
	// lost, as a killed process loses it).
	Crash(ctx context.Context) error
	// Request sends one request and gathers every piece of evidence of who answered it
	// (the body, the backend's own log, Envoy's access log).
	Request(ctx context.Context, req scenario.Request, requestID string) Observation
	// Probe sends one request and keeps only what the answer itself says (status and the
	// backend named in the body): the traffic window sends many, and joins Envoy's
	// access log once at the end.
	Probe(ctx context.Context, req scenario.Request, requestID string) Observation
	// Evidence is the proxy's own view (Envoy's stats and config dump); nil for the
	// simulated client, which has none. Checks that need it are listed as not checked.
	Evidence() evidence
	// Exited is closed when the proxy process dies; ExitErr then says how.
	Exited() <-chan struct{}
	ExitErr() error
	// Hold keeps the proxy from talking to the control plane until release is called
	// (Envoy: SIGSTOP, then SIGCONT; the simulated client: its stream loop stops, keeping
	// what it accepted, and starts again).
	Hold(ctx context.Context) (release func() error, err error)
	// PID is the proxy's process id (0 for the simulated client or when not running).
	PID() int
}

// evidence is what real Envoy shows of itself through its admin interface.
type evidence interface {
	Stats(ctx context.Context) (map[string]string, error)
	ConfigDump(ctx context.Context) ([]byte, error)
	// CPU is the CPU time the running process used so far, with its pid.
	CPU() (time.Duration, int, error)
}

// backendSet is the inventory backends, shared by the run and its proxy: a fault test
// may stop and restart one from another goroutine while requests are being checked.
type backendSet struct {
	mu   sync.Mutex
	list []*inventory.Backend
}

func (s *backendSet) all() []*inventory.Backend {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.list)
}

// logged is the backend whose own log has requestID ("" when none has).
func (s *backendSet) logged(requestID string) string {
	name := ""
	for _, b := range s.all() {
		if _, ok, _ := b.Lookup(requestID); ok {
			name = b.Name()
		}
	}
	return name
}

func (s *backendSet) add(b *inventory.Backend) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list, b)
}

// replace swaps the backend named like b for b.
func (s *backendSet) replace(b *inventory.Backend) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, old := range s.list {
		if old.Name() == b.Name() {
			s.list[i] = b
		}
	}
}

// envoyProxy runs real Envoy with the mode's bootstrap.
type envoyProxy struct {
	// launch starts Envoy on the run's bootstrap, first and after each restart.
	launch       *envoy.Launcher
	accessLog    string
	listenerPort int
	backends     *backendSet
	http         *http.Client

	mu   sync.Mutex
	proc *envoy.Process
}

// newEnvoyProxy renders the mode's bootstrap from params (the run's one rendering: the
// xDS address, the admin port, and the scenario's on-demand clusters) into dir. Envoy
// takes configYAML, the scenario's bootstrap override (--config-yaml), over it.
func newEnvoyProxy(bin envoy.Binary, mode protocol.Mode, dir string, params bootstrap.Params, listenerPort int, backends *backendSet, configYAML string) (*envoyProxy, error) {
	args := []string{"--concurrency", "1"}
	if configYAML != "" {
		args = append(args, "--config-yaml", configYAML)
	}
	l, err := envoy.NewLauncher(envoy.Bootstrap{Mode: mode, Params: params, Path: filepath.Join(dir, "bootstrap.yaml")},
		envoy.Options{Binary: bin, LogPath: filepath.Join(dir, "envoy.log"), ExtraArgs: args})
	if err != nil {
		return nil, err
	}
	return &envoyProxy{
		launch: l, accessLog: filepath.Join(dir, "access.log"),
		listenerPort: listenerPort, backends: backends, http: newDataPlaneClient(),
	}, nil
}

func (e *envoyProxy) Kind() string { return "envoy" }

func (e *envoyProxy) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, err := e.launch.Start(ctx)
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

func (e *envoyProxy) Crash(ctx context.Context) error {
	if err := e.Kill(); err != nil {
		return err
	}
	select {
	case <-e.Exited():
	case <-ctx.Done():
		return fmt.Errorf("kill envoy: %w", ctx.Err())
	}
	return e.Stop(ctx) // reaps what the dead process left
}

func (e *envoyProxy) Exited() <-chan struct{} {
	if p := e.process(); p != nil {
		return p.Exited()
	}
	return nil
}

func (e *envoyProxy) ExitErr() error {
	if p := e.process(); p != nil {
		return p.ExitErr()
	}
	return nil
}

func (e *envoyProxy) PID() int {
	if p := e.process(); p != nil {
		return p.Pid()
	}
	return 0
}

// Hold freezes Envoy with SIGSTOP: it can neither reconnect nor answer until release
// sends SIGCONT. If the workbench dies meanwhile, Pdeathsig's SIGKILL still ends it.
func (e *envoyProxy) Hold(context.Context) (func() error, error) {
	p := e.process()
	if p == nil {
		return nil, errors.New("hold: envoy is not running")
	}
	return holdProcess("envoy", p.Pid())
}

func sigstop(pid int) error { return syscall.Kill(pid, syscall.SIGSTOP) }

// sigcont continues pid; one that is gone meanwhile is not an error.
func sigcont(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
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

func (e *envoyProxy) Evidence() evidence { return e }

func (e *envoyProxy) CPU() (time.Duration, int, error) {
	p := e.process()
	if p == nil {
		return 0, 0, errors.New("envoy is not running")
	}
	d, err := p.CPUTime()
	return d, p.Pid(), err
}

func (e *envoyProxy) Probe(ctx context.Context, q scenario.Request, requestID string) Observation {
	o, _ := e.send(ctx, q, requestID)
	return o
}

// send sends one request through Envoy and reads the answer and the body's backend.
func (e *envoyProxy) send(ctx context.Context, q scenario.Request, requestID string) (Observation, bool) {
	o, _, ok := sendHTTP(ctx, e.http, loopback.Addr(e.listenerPort), q, requestID)
	o.Client = ClientEnvoy
	return o, ok
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
	var quote inventory.Quote
	if json.Unmarshal(body, &quote) == nil && quote.Backend != "" && quote.RequestID == requestID {
		o.BodyBackend = quote.Backend
	}
	o.Class = Classify(o.Status, "")
	return o, resp.Header, true
}

func (e *envoyProxy) Request(ctx context.Context, q scenario.Request, requestID string) Observation {
	o, answered := e.send(ctx, q, requestID)
	if !answered {
		return o
	}
	o.LogBackend = e.backends.logged(requestID)
	// The access log is flushed every 100 ms (--file-flush-interval-msec); wait for it.
	actx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if a, err := envoy.WaitAccess(actx, e.accessLog, requestID); err == nil {
		o.Access = &a
		o.Flags = a.Flags
		o.Upstream = a.UpstreamHost
	}
	o.Class = Classify(o.Status, o.Flags)
	return o
}

// simProxy is the simulated client: its data plane is computed, never forwarded.
type simProxy struct {
	mode     protocol.Mode
	xdsAddr  string
	client   *simclient.Client
	backends *backendSet

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	exited chan struct{}
	// stopped: the client was stopped as a process is, so the next Start is a new
	// process with nothing accepted (Hold keeps the state instead).
	stopped bool
}

func newSimProxy(mode protocol.Mode, xdsAddr string, backends *backendSet) (*simProxy, error) {
	c, err := simclient.New(mode, resources.NodeID)
	if err != nil {
		return nil, err
	}
	return &simProxy{mode: mode, xdsAddr: xdsAddr, client: c, backends: backends, exited: make(chan struct{})}, nil
}

func (s *simProxy) Kind() string { return "simulated" }

// Start runs the client with reconnects, like Envoy: when the stream breaks it dials
// again with a short backoff, keeping what it accepted. After Stop it is a new process,
// as a restarted Envoy is: it starts with nothing accepted and subscribes afresh.
func (s *simProxy) Start(ctx context.Context) error {
	s.mu.Lock()
	restart := s.stopped
	s.stopped = false
	s.mu.Unlock()
	if restart {
		c, err := simclient.New(s.mode, resources.NodeID)
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.client = c
		s.mu.Unlock()
	}
	return s.run(ctx)
}

func (s *simProxy) run(ctx context.Context) error {
	conn, err := grpc.NewClient("passthrough:///"+s.xdsAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("dial %s: %w", s.xdsAddr, err)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	s.mu.Lock()
	s.cancel, s.done = cancel, done
	client := s.client
	s.mu.Unlock()
	go func() {
		defer close(done)
		defer conn.Close()
		backoff := 100 * time.Millisecond
		for rctx.Err() == nil {
			_ = client.Run(rctx, conn)
			select {
			case <-rctx.Done():
			case <-time.After(backoff):
			}
		}
	}()
	return nil
}

func (s *simProxy) Stop(context.Context) error {
	s.halt()
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	return nil
}

// halt ends the client's stream loop and waits for it.
func (s *simProxy) halt() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.cancel = nil
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (s *simProxy) Crash(ctx context.Context) error { return s.Stop(ctx) }

func (s *simProxy) Exited() <-chan struct{} { return s.exited }

func (s *simProxy) ExitErr() error { return nil }

func (s *simProxy) PID() int { return 0 }

// Hold stops the client's stream loop (it keeps what it accepted); release starts it again.
func (s *simProxy) Hold(ctx context.Context) (func() error, error) {
	s.halt()
	var once sync.Once
	return func() (err error) {
		once.Do(func() { err = s.run(ctx) })
		return err
	}, nil
}

func (s *simProxy) Evidence() evidence { return nil }

func (s *simProxy) Probe(ctx context.Context, q scenario.Request, requestID string) Observation {
	return s.Request(ctx, q, requestID)
}

func (s *simProxy) Request(_ context.Context, q scenario.Request, requestID string) Observation {
	o := Observation{RequestID: requestID, Path: q.Path, Host: q.Host, At: time.Now().UTC().Format(time.RFC3339Nano), Sent: time.Now().UTC(), Simulated: true}
	s.mu.Lock()
	client := s.client
	s.mu.Unlock()
	r := client.RouteRequest(simclient.Request{Path: q.Path, Headers: q.Headers, ID: requestID})
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
		for _, b := range s.backends.all() {
			if b.Port() == port {
				o.BodyBackend = b.Name()
			}
		}
	}
	o.Class = Classify(o.Status, o.Flags)
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
