package client

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/scenario"
)

// EnvoyOptions say how to run one real Envoy.
type EnvoyOptions struct {
	// Bootstrap is rendered and written once, by NewEnvoy; every Start runs Envoy on it.
	Bootstrap envoy.Bootstrap
	// Process says how Envoy runs (binary, log, extra arguments, stop grace); its
	// ConfigPath is the bootstrap's.
	Process envoy.Options
	// ListenerPort is where the state puts Envoy's listener: where Probe sends (0: no
	// data plane to probe).
	ListenerPort int
	// HTTP sends the probes (NewHTTPClient when nil).
	HTTP *http.Client
	// TLSRoots is what a TLS probe (scenario.Request.TLS) trusts: the run's CA.
	TLSRoots *x509.CertPool
}

// Envoy is real Envoy as a Client: the one caller-side wrapper of experiments/envoy's
// process, for every harness.
type Envoy struct {
	launch       *envoy.Launcher
	listenerPort int
	http         *http.Client
	tls          *tlsProber
	held         heldProber

	mu   sync.Mutex
	proc *envoy.Process
}

// NewEnvoy renders and writes o's bootstrap; Start then runs Envoy on it.
func NewEnvoy(o EnvoyOptions) (*Envoy, error) {
	l, err := envoy.NewLauncher(o.Bootstrap, o.Process)
	if err != nil {
		return nil, err
	}
	h := o.HTTP
	if h == nil {
		h = NewHTTPClient()
	}
	return &Envoy{launch: l, listenerPort: o.ListenerPort, http: h, tls: newTLSProber(o.TLSRoots)}, nil
}

// Kind is KindEnvoy.
func (e *Envoy) Kind() Kind { return KindEnvoy }

// Start runs Envoy and returns once its admin interface answers.
func (e *Envoy) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, err := e.launch.Start(ctx)
	if err != nil {
		return fmt.Errorf("start envoy: %w", err)
	}
	e.proc = p
	return nil
}

// Process is the Envoy process started last (nil before Start): its admin address, log,
// stats and resident size.
func (e *Envoy) Process() *envoy.Process {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.proc
}

// running is the process, or an error saying Envoy is not running.
func (e *Envoy) running() (*envoy.Process, error) {
	if p := e.Process(); p != nil {
		return p, nil
	}
	return nil, errors.New("envoy is not running")
}

// Stop ends Envoy with /quitquitquit, then signals (envoy.Process.Stop).
func (e *Envoy) Stop(ctx context.Context) error {
	p := e.Process()
	if p == nil {
		return nil
	}
	return p.Stop(ctx)
}

// Kill ends Envoy with SIGKILL without waiting.
func (e *Envoy) Kill() error {
	p, err := e.running()
	if err != nil {
		return err
	}
	return p.Kill()
}

// Crash kills Envoy and returns once it is gone.
func (e *Envoy) Crash(ctx context.Context) error {
	p, err := e.running()
	if err != nil {
		return err
	}
	return crash(ctx, "envoy", p)
}

// killable is a child process Crash ends.
type killable interface {
	Kill() error
	Exited() <-chan struct{}
	Stop(ctx context.Context) error
}

// crash kills p, waits for its exit and reaps what it left.
func crash(ctx context.Context, what string, p killable) error {
	if err := p.Kill(); err != nil {
		return err
	}
	select {
	case <-p.Exited():
	case <-ctx.Done():
		return fmt.Errorf("kill %s: %w", what, ctx.Err())
	}
	return p.Stop(ctx) // reaps what the dead process left
}

// Exited is closed when the Envoy started last exits (nil before Start).
func (e *Envoy) Exited() <-chan struct{} {
	if p := e.Process(); p != nil {
		return p.Exited()
	}
	return nil
}

// Err is how Envoy exited, once Exited is closed.
func (e *Envoy) Err() error {
	if p := e.Process(); p != nil {
		return p.ExitErr()
	}
	return nil
}

// PID is Envoy's process id (0 before Start).
func (e *Envoy) PID() int {
	if p := e.Process(); p != nil {
		return p.Pid()
	}
	return 0
}

// Hold freezes Envoy with SIGSTOP: it can neither reconnect nor answer until release
// sends SIGCONT. If the workbench dies meanwhile, Pdeathsig's SIGKILL still ends it.
func (e *Envoy) Hold(context.Context) (func() error, error) {
	p := e.Process()
	if p == nil {
		return nil, errors.New("hold: envoy is not running")
	}
	return holdProcess("envoy", p.Pid())
}

// Stats reads Envoy's /stats.
func (e *Envoy) Stats(ctx context.Context) (map[string]string, error) {
	p, err := e.running()
	if err != nil {
		return nil, err
	}
	return p.Stats(ctx)
}

// ConfigDump reads Envoy's /config_dump, endpoints included.
func (e *Envoy) ConfigDump(ctx context.Context) ([]byte, error) {
	p, err := e.running()
	if err != nil {
		return nil, err
	}
	return p.ConfigDump(ctx, true)
}

// CPU is the CPU time Envoy used so far, with its pid.
func (e *Envoy) CPU() (time.Duration, int, error) {
	p, err := e.running()
	if err != nil {
		return 0, 0, err
	}
	d, err := p.CPUTime()
	return d, p.Pid(), err
}

// Probe sends one request through Envoy's listener and reads the answer and the backend
// its body names.
func (e *Envoy) Probe(ctx context.Context, q scenario.Request, requestID string) Observation {
	if q.TLS {
		o := e.tls.probe(ctx, loopback.Addr(e.listenerPort), q, requestID)
		o.Client = string(KindEnvoy)
		return o
	}
	if q.Held {
		o := e.held.probe(ctx, loopback.Addr(e.listenerPort), q, requestID)
		o.Client = string(KindEnvoy)
		return o
	}
	o, _, _ := sendHTTP(ctx, e.http, loopback.Addr(e.listenerPort), q, requestID)
	o.Client = string(KindEnvoy)
	return o
}
