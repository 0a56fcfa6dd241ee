package client

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/scenario"
)

// SimOptions say how to run the simulated client.
type SimOptions struct {
	Mode protocol.Mode
	// Node is the node ID it sends (resources.NodeID when empty).
	Node string
	// Addr is the control plane's address, dialled as passthrough:///Addr.
	Addr string
	// Dial are extra dial options (window sizes, message limits).
	Dial []grpc.DialOption
	// BackendAt names the backend listening on a port, for Probe's answer (nil: none).
	BackendAt func(port int) string
	// Reject, when set, makes the client NACK a valid response of a type when it
	// returns true (simclient.Client.SetRejecter).
	Reject func(resources.Type) bool
}

// Sim is the simulated client: its data plane is computed from what it accepted, never
// forwarded. Start runs it in the background with reconnects, as Envoy does; Run and
// RunOn run one stream for a caller that manages the stream's life itself.
type Sim struct {
	o SimOptions

	mu     sync.Mutex
	client *simclient.Client
	cancel context.CancelFunc
	done   chan struct{}
	exited chan struct{}
	err    error
	// stopped: the client was stopped as a process is, so the next Start is a new
	// process with nothing accepted (Hold keeps the state instead).
	stopped bool
}

// NewSim makes the simulated client; nothing connects before Start, Run or RunOn.
func NewSim(o SimOptions) (*Sim, error) {
	if o.Node == "" {
		o.Node = resources.NodeID
	}
	s := &Sim{o: o, exited: make(chan struct{})}
	c, err := s.newClient()
	if err != nil {
		return nil, err
	}
	s.client = c
	return s, nil
}

// newClient is a fresh simulated client with nothing accepted.
func (s *Sim) newClient() (*simclient.Client, error) {
	c, err := simclient.New(s.o.Mode, s.o.Node)
	if err != nil {
		return nil, err
	}
	if s.o.Reject != nil {
		c.SetRejecter(s.o.Reject)
	}
	return c, nil
}

// Kind is KindSimulated.
func (s *Sim) Kind() Kind { return KindSimulated }

// Simulated is the simulated client itself (WaitFor, StopReading, Received).
func (s *Sim) Simulated() *simclient.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client
}

// State is what the client accepted, as it holds it now.
func (s *Sim) State() simclient.State { return s.Simulated().State() }

// dial opens the client's own connection to the control plane.
func (s *Sim) dial() (*grpc.ClientConn, error) {
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, s.o.Dial...)
	conn, err := grpc.NewClient("passthrough:///"+s.o.Addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", s.o.Addr, err)
	}
	return conn, nil
}

// Run runs one stream on a connection of its own until ctx ends or the stream breaks.
func (s *Sim) Run(ctx context.Context) error {
	conn, err := s.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	return s.RunOn(ctx, conn)
}

// RunOn runs one stream on conn until ctx ends or the stream breaks; several RunOn may
// share one client's state over several connections (the bench's fan-out clients). Err
// then reports the first stream that failed.
func (s *Sim) RunOn(ctx context.Context, conn grpc.ClientConnInterface) error {
	err := s.Simulated().Run(ctx, conn)
	if err != nil {
		s.mu.Lock()
		if s.err == nil {
			s.err = err
		}
		s.mu.Unlock()
	}
	return err
}

// Start runs the client with reconnects, like Envoy: when the stream breaks it dials
// again with a short backoff, keeping what it accepted. After Stop it is a new process,
// as a restarted Envoy is: it starts with nothing accepted and subscribes afresh.
func (s *Sim) Start(ctx context.Context) error {
	s.mu.Lock()
	restart := s.stopped
	s.stopped = false
	s.mu.Unlock()
	if restart {
		c, err := s.newClient()
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.client = c
		s.mu.Unlock()
	}
	return s.run(ctx)
}

// run starts the stream loop in the background.
func (s *Sim) run(ctx context.Context) error {
	conn, err := s.dial()
	if err != nil {
		return err
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

// Stop ends the stream loop; the next Start is a new client with nothing accepted.
func (s *Sim) Stop(context.Context) error {
	s.halt()
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	return nil
}

// halt ends the client's stream loop and waits for it.
func (s *Sim) halt() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.cancel = nil
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Crash is Stop: the simulated client has no process, and loses what it accepted.
func (s *Sim) Crash(ctx context.Context) error { return s.Stop(ctx) }

// Exited is never closed: the simulated client has no process to die.
func (s *Sim) Exited() <-chan struct{} { return s.exited }

// Err is the first error a stream of Run or RunOn ended with (nil for Start's loop,
// which reconnects).
func (s *Sim) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Hold stops the client's stream loop (it keeps what it accepted); release starts it again.
func (s *Sim) Hold(ctx context.Context) (func() error, error) {
	s.halt()
	var once sync.Once
	return func() (err error) {
		once.Do(func() { err = s.run(ctx) })
		return err
	}, nil
}

// Probe computes the answer from the accepted configuration: the route, the cluster and
// the endpoint Envoy would pick, and the backend listening there (BackendAt).
func (s *Sim) Probe(_ context.Context, q scenario.Request, requestID string) Observation {
	o := Observation{RequestID: requestID, Path: q.Path, Host: q.Host, At: time.Now().UTC().Format(time.RFC3339Nano), Sent: time.Now().UTC(), Simulated: true}
	r := s.Simulated().RouteRequest(simclient.Request{Path: q.Path, Headers: q.Headers, ID: requestID})
	o.Status = r.Status
	if r.Status == 0 {
		o.Error = "simulated: no listener accepted"
	}
	if r.Flags != "-" {
		o.Flags = r.Flags
	}
	o.Upstream = r.Endpoint
	if i := strings.LastIndexByte(r.Endpoint, ':'); i >= 0 && s.o.BackendAt != nil {
		port, _ := strconv.Atoi(r.Endpoint[i+1:])
		o.BodyBackend = s.o.BackendAt(port)
	}
	o.Class = Classify(o.Status, o.Flags)
	return o
}
