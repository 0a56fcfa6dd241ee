// Package session is one run's xDS world: its recorder (xds.log), its control plane
// across restarts, its clients and its backends, started, published to and closed in one
// order. It composes experiments/controlplane (which owns the cache and its publisher)
// and experiments/client; the drivers (the runner, the bench, the churn soak and `lab
// serve`) each make one Session per run instead of starting a control plane themselves,
// and tests construct one the same way.
//
// It is modelled on grpc.NewServer and Serve, and on httptest.Server: New validates and
// builds, not serving yet; Start serves on a loopback address (or Serve on a listener the
// caller brings, a test's bufconn); Close stops everything, clients first.
package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"

	"github.com/xds-workbench/lab/experiments/client"
	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// Options configure a session.
type Options struct {
	// ControlPlane is every control-plane instance's options, validated by
	// controlplane.New. Its Addr is where Start listens; its Recorder must be left nil:
	// the session makes the recorder of each instance.
	ControlPlane controlplane.Options
	// Log is where every instance's recorder writes xds.log (required). The caller owns
	// it and closes it after Close.
	Log io.Writer
	// Record are the recorder options of every instance (observer, label book, log size);
	// the session adds the instance's number (xdslog.WithServer).
	Record []xdslog.Option
}

// Backend is something a run's clients send to; Close stops it after the control plane.
type Backend interface {
	Stop(ctx context.Context) error
}

// Session is one run's control plane, recorder, clients and backends.
type Session struct {
	o Options

	mu sync.Mutex
	cp *controlplane.ControlPlane
	// rec is the current instance's recorder; server its number, from 1.
	rec    *xdslog.Recorder
	server int
	// step is the step label every new recorder starts with.
	step string
	// addr is the address served (Start's, kept across restarts); life bounds every
	// instance (Start's context).
	addr     string
	life     context.Context
	clients  []client.Client
	backends []Backend
	closed   bool
}

// New validates o and builds the first control plane and its recorder, not serving yet.
func New(o Options) (*Session, error) {
	if o.Log == nil {
		return nil, errors.New("session: no log: xds.log is required")
	}
	if o.ControlPlane.Recorder != nil {
		return nil, errors.New("session: the control plane's recorder is the session's: leave it unset")
	}
	s := &Session{o: o, life: context.Background()}
	if err := s.build(); err != nil {
		return nil, err
	}
	return s, nil
}

// build makes the next instance: its recorder (with the step in progress) and its
// control plane.
func (s *Session) build() error {
	rec := xdslog.NewRecorder(s.o.Log, s.o.ControlPlane.Mode, slices.Concat(s.o.Record, []xdslog.Option{xdslog.WithServer(s.server + 1)})...)
	rec.SetStep(s.step)
	opts := s.o.ControlPlane
	opts.Recorder = rec
	cp, err := controlplane.New(opts)
	if err != nil {
		return fmt.Errorf("start %w", err)
	}
	s.server++
	s.cp, s.rec = cp, rec
	return nil
}

// Start serves the control plane on the loopback address of the options (port 0: a free
// one) until Close, or until ctx is done.
func (s *Session) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.life = ctx
	return s.serveLocked(s.o.ControlPlane.Addr)
}

// serveLocked serves the current instance on addr in the background.
func (s *Session) serveLocked(addr string) error {
	if err := s.cp.Listen(s.life, addr); err != nil {
		return err
	}
	s.addr = s.cp.Addr()
	return nil
}

// Serve serves the control plane on lis until Close, as grpc.Server.Serve does: a test
// brings a bufconn listener. RestartControlPlane needs Start's loopback address instead.
func (s *Session) Serve(lis net.Listener) error {
	s.mu.Lock()
	cp := s.cp
	s.mu.Unlock()
	return cp.Serve(lis)
}

// ControlPlane is the instance running now (replaced by RestartControlPlane).
func (s *Session) ControlPlane() *controlplane.ControlPlane {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cp
}

// Recorder is the current instance's recorder.
func (s *Session) Recorder() *xdslog.Recorder {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec
}

// Server is the current instance's number, from 1 (xds.log's server field).
func (s *Session) Server() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.server
}

// Addr is the address served, 127.0.0.1:PORT after Start ("" before).
func (s *Session) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// SetStep labels the events recorded from now on with step, on this instance and on
// every one after it.
func (s *Session) SetStep(step string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.step = step
	s.rec.SetStep(step)
}

// Publish makes st the state served (controlplane.ControlPlane.Publish).
func (s *Session) Publish(ctx context.Context, st resources.State) (*resources.Set, error) {
	return s.ControlPlane().Publish(ctx, st)
}

// PublishSet makes set, built by the caller, the state served.
func (s *Session) PublishSet(ctx context.Context, set *resources.Set) error {
	return s.ControlPlane().PublishSet(ctx, set)
}

// StopControlPlane stops the control plane running (a crash of the xDS server: every
// stream is cut); the clients and backends keep running. RestartControlPlane starts the
// next one.
func (s *Session) StopControlPlane() { s.ControlPlane().Stop() }

// RestartControlPlane stops the control plane if it still runs and starts the next
// instance on the same address, with a recorder of its own (the next server number, the
// same log and step). It serves nothing until published to.
func (s *Session) RestartControlPlane() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("restart control plane: the session is closed")
	}
	if s.addr == "" {
		return errors.New("restart control plane: the session was not started on a loopback address")
	}
	s.cp.Stop()
	if err := s.build(); err != nil {
		return fmt.Errorf("restart control plane: %w", err)
	}
	return s.serveLocked(s.addr)
}

// AddClient makes c one of the session's clients: Close stops it.
func (s *Session) AddClient(c client.Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients = append(s.clients, c)
}

// Clients are the session's clients, in the order added.
func (s *Session) Clients() []client.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]client.Client(nil), s.clients...)
}

// AddBackend makes b one of the session's backends: Close stops it after the control
// plane.
func (s *Session) AddBackend(b Backend) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.backends = append(s.backends, b)
}

// StopClients stops every client at once (each takes a moment to drain) and returns once
// all are gone. Close calls it first; a caller that stops more before the control plane
// (a tap between them) calls it itself.
func (s *Session) StopClients(ctx context.Context) error {
	cls := s.Clients()
	errs := make([]error, len(cls))
	var wg sync.WaitGroup
	for i, c := range cls {
		wg.Go(func() {
			if err := c.Stop(ctx); err != nil {
				errs[i] = fmt.Errorf("stop %s: %w", c.Kind(), err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close stops the clients, then the control plane (its streams' closes are recorded
// while the recorder still writes), then the backends, and flushes the recorder. It
// returns what failed, the recorder's write errors included.
func (s *Session) Close(ctx context.Context) error {
	err := s.StopClients(ctx)
	s.mu.Lock()
	s.closed = true
	cp, rec, backends := s.cp, s.rec, s.backends
	s.mu.Unlock()
	cp.Stop()
	errs := []error{err}
	for _, b := range backends {
		errs = append(errs, b.Stop(ctx))
	}
	rec.Flush()
	// The recorder's error names xds.log itself ("write xds.log: ...").
	errs = append(errs, rec.Err())
	return errors.Join(errs...)
}
