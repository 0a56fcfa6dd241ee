// Package client is the one interface of an xDS client under test, and its three kinds:
// real Envoy (Envoy, launched through experiments/envoy), grpc-go's own xDS client in a
// process of its own (GRPC, experiments/grpcclient) and the simulated client (Sim,
// experiments/simclient). It feeds the drivers: experiments/session keeps a run's
// clients, and the runner, the bench, the churn soak and `lab serve` start theirs here
// and nowhere else.
//
// Every client has the small Client interface (start, stop, crash, exit). What only some
// clients can do is a separate interface, checked by type assertion as http.Flusher is:
// Prober (send one request through the client's data plane), Holder (keep it from
// talking to the control plane), Process (a child process: its pid, SIGKILL), and its own
// view of what it holds: AdminViewer (Envoy's admin), CSDSViewer (grpc-go's CSDS),
// StateViewer (the simulated client's accepted state).
package client

import (
	"context"
	"time"

	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"

	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/shared/scenario"
)

// Kind names a kind of client, as run.json and the checkpoints name it.
type Kind string

// The kinds of client.
const (
	KindEnvoy     Kind = "envoy"
	KindGRPC      Kind = "grpc"
	KindSimulated Kind = "simulated"
)

// Client is one xDS client under test.
type Client interface {
	Kind() Kind
	// Start starts the client against its control plane; again after Stop or Crash, as a
	// new process with nothing accepted.
	Start(ctx context.Context) error
	// Stop ends the client cleanly (Envoy: /quitquitquit) and returns once it is gone; a
	// client never started is stopped already.
	Stop(ctx context.Context) error
	// Crash ends the client at once and returns when it is gone (SIGKILL; the simulated
	// client, which has no process: its stream is cut and what it accepted is lost, as a
	// killed process loses it).
	Crash(ctx context.Context) error
	// Exited is closed when the client's process dies (nil before it started; never
	// closed for the simulated client); Err then says how.
	Exited() <-chan struct{}
	Err() error
}

// Process is a client running as a child process.
type Process interface {
	// PID is the process id (0 when not running).
	PID() int
	// Kill sends SIGKILL without waiting (fault tests); watch Exited for the exit.
	Kill() error
}

// Holder is a client that can be kept from talking to the control plane, keeping what it
// accepted, until release is called (a process: SIGSTOP, then SIGCONT; the simulated
// client: its stream loop stops and starts again).
type Holder interface {
	Hold(ctx context.Context) (release func() error, err error)
}

// Prober is a client with a data plane: one request through it, and what the answer
// itself says (status, the backend named in the body, the class of the answer).
type Prober interface {
	Probe(ctx context.Context, req scenario.Request, requestID string) Observation
}

// AdminViewer is a client's view of itself through Envoy's admin interface.
type AdminViewer interface {
	Stats(ctx context.Context) (map[string]string, error)
	ConfigDump(ctx context.Context) ([]byte, error)
	// CPU is the CPU time the running process used so far, with its pid.
	CPU() (time.Duration, int, error)
}

// CSDSViewer is a client that reports its own resources through CSDS (grpc-go).
type CSDSViewer interface {
	ClientStatus(ctx context.Context) (*statuspb.ClientStatusResponse, error)
}

// StateViewer is a client whose accepted state is read directly (the simulated client).
type StateViewer interface {
	State() simclient.State
}

// Compile-time checks: which kind has which capability.
var (
	_ Client      = (*Envoy)(nil)
	_ Process     = (*Envoy)(nil)
	_ Holder      = (*Envoy)(nil)
	_ Prober      = (*Envoy)(nil)
	_ AdminViewer = (*Envoy)(nil)

	_ Client     = (*GRPC)(nil)
	_ Process    = (*GRPC)(nil)
	_ Holder     = (*GRPC)(nil)
	_ Prober     = (*GRPC)(nil)
	_ CSDSViewer = (*GRPC)(nil)

	_ Client      = (*Sim)(nil)
	_ Holder      = (*Sim)(nil)
	_ Prober      = (*Sim)(nil)
	_ StateViewer = (*Sim)(nil)
)
