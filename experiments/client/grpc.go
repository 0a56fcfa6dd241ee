package client

import (
	"context"
	"errors"
	"net/http"
	"sync"

	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"

	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/shared/scenario"
)

// GRPC is grpc-go's own xDS client in a process of its own (`lab grpc-client`): each
// probe goes through its HTTP front door, which makes it one RPC through the xDS
// channel. It has no Envoy admin; its own view is CSDS (ClientStatus).
type GRPC struct {
	opts grpcclient.StartOptions
	http *http.Client

	mu     sync.Mutex
	client *grpcclient.Client
}

// NewGRPC is the client o starts (nothing runs before Start); probes are sent with h
// (NewHTTPClient when nil).
func NewGRPC(o grpcclient.StartOptions, h *http.Client) *GRPC {
	if h == nil {
		h = NewHTTPClient()
	}
	return &GRPC{opts: o, http: h}
}

// Kind is KindGRPC.
func (g *GRPC) Kind() Kind { return KindGRPC }

// Start starts the client process and returns once its ports are known.
func (g *GRPC) Start(ctx context.Context) error {
	c, err := grpcclient.Start(ctx, g.opts)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.client = c
	g.mu.Unlock()
	return nil
}

// Process is the client process started last (nil before Start): its front door, CSDS
// address and pid.
func (g *GRPC) Process() *grpcclient.Client {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.client
}

// running is the process, or an error saying the client is not running.
func (g *GRPC) running() (*grpcclient.Client, error) {
	if c := g.Process(); c != nil {
		return c, nil
	}
	return nil, errors.New("the grpc client is not running")
}

// Stop stops the client process (killed when still busy after its grace).
func (g *GRPC) Stop(ctx context.Context) error {
	if c := g.Process(); c != nil {
		return c.Stop(ctx)
	}
	return nil
}

// Crash kills the client with SIGKILL, as a crashed process: what it accepted is lost.
func (g *GRPC) Crash(ctx context.Context) error {
	c, err := g.running()
	if err != nil {
		return err
	}
	return crash(ctx, "grpc client", c)
}

// Kill ends the client with SIGKILL without waiting.
func (g *GRPC) Kill() error {
	c, err := g.running()
	if err != nil {
		return err
	}
	return c.Kill()
}

// Exited is closed when the process started last exits (nil before Start).
func (g *GRPC) Exited() <-chan struct{} {
	if c := g.Process(); c != nil {
		return c.Exited()
	}
	return nil
}

// Err is how the process exited, once Exited is closed.
func (g *GRPC) Err() error {
	if c := g.Process(); c != nil {
		return c.ExitErr()
	}
	return nil
}

// PID is the process id (0 before Start).
func (g *GRPC) PID() int {
	if c := g.Process(); c != nil {
		return c.Pid()
	}
	return 0
}

// Hold freezes the client with SIGSTOP, as Envoy is held.
func (g *GRPC) Hold(context.Context) (func() error, error) {
	c := g.Process()
	if c == nil {
		return nil, errors.New("hold: the grpc client is not running")
	}
	return holdProcess("grpc client", c.Pid())
}

// ClientStatus is the client's own view of its resources, from its CSDS.
func (g *GRPC) ClientStatus(ctx context.Context) (*statuspb.ClientStatusResponse, error) {
	c := g.Process()
	if c == nil {
		return nil, errors.New("csds: the grpc client is not running")
	}
	return c.ClientStatus(ctx)
}

// Probe is one request through the front door; the RPC's status and the endpoint it
// went to come back as headers.
func (g *GRPC) Probe(ctx context.Context, q scenario.Request, requestID string) Observation {
	addr := ""
	if c := g.Process(); c != nil {
		addr = c.FrontDoor()
	}
	o, resp, ok := sendHTTP(ctx, g.http, addr, q, requestID)
	o.Client = string(KindGRPC)
	if ok {
		o.GRPCStatus = resp.Get(grpcclient.HeaderGRPCStatus)
		o.GRPCMessage = resp.Get(grpcclient.HeaderGRPCMessage)
		o.Upstream = resp.Get(grpcclient.HeaderUpstream)
		o.Class = grpcClass(o.GRPCStatus, o.GRPCMessage)
	}
	return o
}
