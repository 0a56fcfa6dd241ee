package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc/codes"

	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/shared/option"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/scenario"
)

// ClientGRPC is grpc-go's own xDS client as the data plane (experiments/grpcclient).
const ClientGRPC = "grpc"

// errGRPCOnDemand is why on-demand scenarios do not apply to the grpc client.
var errGRPCOnDemand = errors.New("on-demand xDS is Envoy's on_demand filter (VHDS, on-demand CDS), which grpc-go has not " +
	"(it NACKs a listener naming a filter it has no implementation of: internal/xds/xdsclient/xdsresource/unmarshal_lds.go, validateHTTPFilterConfig)")

// grpcCommand checks a grpc run before anything starts and returns how to run the client.
func grpcCommand(o Options, sc *scenario.Scenario) (grpcclient.Command, error) {
	if o.Mode != protocol.SotW {
		return grpcclient.Command{}, grpcclient.ErrNoDelta
	}
	if o.ConfigYAML != "" {
		return grpcclient.Command{}, &option.Error{Option: OptionConfigYAML, Err: errors.New("is merged over Envoy's bootstrap; the grpc client has none")}
	}
	if sc.OnDemand.Any() {
		return grpcclient.Command{}, &scenario.NotApplicableError{Scenario: sc.Name, Where: "the grpc client", Reason: errGRPCOnDemand}
	}
	if why, ok := sc.NotFor[ClientGRPC]; ok {
		return grpcclient.Command{}, &scenario.NotApplicableError{Scenario: sc.Name, Where: "the grpc client", Reason: errors.New(why)}
	}
	if names := listenerNames(sc); len(names) != 1 {
		return grpcclient.Command{}, &scenario.NotApplicableError{Scenario: sc.Name, Where: "the grpc client",
			Reason: fmt.Errorf("the grpc client dials one listener (xds:///<name>); the scenario has %d: %v", len(names), names)}
	}
	if err := sc.CheckProxyless(); err != nil {
		return grpcclient.Command{}, &scenario.NotApplicableError{Scenario: sc.Name, Where: "the grpc client", Reason: err}
	}
	if o.GRPCCommand.Path != "" {
		return o.GRPCCommand, nil
	}
	return grpcclient.LabCommand()
}

// listenerNames are the listener names a scenario's resources define, sorted.
func listenerNames(sc *scenario.Scenario) []string {
	seen := map[string]bool{}
	for _, r := range sc.Resources {
		for _, it := range r.Items {
			if it.Type == resources.LDS {
				seen[it.Name] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// grpcTarget is what the grpc client dials: the scenario's one listener (grpc-go
// subscribes to the listener its target names; see resources.ProxylessTarget).
func grpcTarget(sc *scenario.Scenario) string {
	if names := listenerNames(sc); len(names) == 1 {
		return "xds:///" + names[0]
	}
	return resources.ProxylessTarget
}

// grpcProxy runs grpc-go's xDS client in a process of its own (`lab grpc-client`) and
// sends each request through its HTTP front door, which makes it one RPC through the xDS
// channel. It has no Envoy admin: Evidence is nil, and its own view is CSDS
// (ClientStatus).
type grpcProxy struct {
	cmd       grpcclient.Command
	xdsAddr   string
	target    string
	logPath   string
	frontDoor int // the run's listener port: the front door stands where Envoy's listener would
	backends  *backendSet
	http      *http.Client

	mu     sync.Mutex
	client *grpcclient.Client
}

// clientStatusViewer is a proxy that reports its own resources through CSDS.
type clientStatusViewer interface {
	ClientStatus(ctx context.Context) (*statuspb.ClientStatusResponse, error)
}

var _ clientStatusViewer = (*grpcProxy)(nil)

func newGRPCProxy(cmd grpcclient.Command, xdsAddr, target, dir string, frontDoor int, backends *backendSet) *grpcProxy {
	return &grpcProxy{cmd: cmd, xdsAddr: xdsAddr, target: target, logPath: filepath.Join(dir, "grpc-client.log"),
		frontDoor: frontDoor, backends: backends, http: newDataPlaneClient()}
}

func (g *grpcProxy) Kind() string { return ClientGRPC }

func (g *grpcProxy) Start(ctx context.Context) error {
	c, err := grpcclient.Start(ctx, grpcclient.StartOptions{Command: g.cmd, XDSAddr: g.xdsAddr, NodeID: resources.NodeID,
		Target: g.target, LogPath: g.logPath, FrontDoorPort: g.frontDoor})
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.client = c
	g.mu.Unlock()
	return nil
}

func (g *grpcProxy) current() *grpcclient.Client {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.client
}

func (g *grpcProxy) Stop(ctx context.Context) error {
	if c := g.current(); c != nil {
		return c.Stop(ctx)
	}
	return nil
}

// Crash kills the client with SIGKILL, as a crashed process: what it accepted is lost.
func (g *grpcProxy) Crash(ctx context.Context) error {
	c := g.current()
	if c == nil {
		return errors.New("crash: the grpc client is not running")
	}
	if err := c.Kill(); err != nil {
		return err
	}
	select {
	case <-c.Exited():
	case <-ctx.Done():
		return fmt.Errorf("kill grpc client: %w", ctx.Err())
	}
	return c.Stop(ctx) // reaps what the dead process left
}

// Kill ends the client with SIGKILL (fault tests).
func (g *grpcProxy) Kill() error {
	c := g.current()
	if c == nil {
		return errors.New("the grpc client is not running")
	}
	return c.Kill()
}

func (g *grpcProxy) Exited() <-chan struct{} {
	if c := g.current(); c != nil {
		return c.Exited()
	}
	return nil
}

func (g *grpcProxy) ExitErr() error {
	if c := g.current(); c != nil {
		return c.ExitErr()
	}
	return nil
}

func (g *grpcProxy) PID() int {
	if c := g.current(); c != nil {
		return c.Pid()
	}
	return 0
}

// Hold freezes the client with SIGSTOP, as Envoy is held.
func (g *grpcProxy) Hold(context.Context) (func() error, error) {
	c := g.current()
	if c == nil {
		return nil, errors.New("hold: the grpc client is not running")
	}
	return holdProcess("grpc client", c.Pid())
}

func (g *grpcProxy) Evidence() evidence { return nil }

// ClientStatus is the client's own view of its resources, from its CSDS.
func (g *grpcProxy) ClientStatus(ctx context.Context) (*statuspb.ClientStatusResponse, error) {
	c := g.current()
	if c == nil {
		return nil, errors.New("csds: the grpc client is not running")
	}
	return c.ClientStatus(ctx)
}

func (g *grpcProxy) Probe(ctx context.Context, q scenario.Request, requestID string) Observation {
	o, _ := g.send(ctx, q, requestID)
	return o
}

func (g *grpcProxy) Request(ctx context.Context, q scenario.Request, requestID string) Observation {
	o, answered := g.send(ctx, q, requestID)
	if answered {
		o.LogBackend = g.backends.logged(requestID)
	}
	return o
}

// send is one request through the front door; the RPC's status and the endpoint it went
// to come back as headers.
func (g *grpcProxy) send(ctx context.Context, q scenario.Request, requestID string) (Observation, bool) {
	addr := ""
	if c := g.current(); c != nil {
		addr = c.FrontDoor()
	}
	o, resp, ok := sendHTTP(ctx, g.http, addr, q, requestID)
	o.Client = ClientGRPC
	if ok {
		o.GRPCStatus = resp.Get(grpcclient.HeaderGRPCStatus)
		o.GRPCMessage = resp.Get(grpcclient.HeaderGRPCMessage)
		o.Upstream = resp.Get(grpcclient.HeaderUpstream)
		o.Class = grpcClass(o.GRPCStatus, o.GRPCMessage)
	}
	return o, ok
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

// newDataPlaneClient is the HTTP client of the data-plane requests: a fresh connection
// per request, so each one is routed anew.
func newDataPlaneClient() *http.Client {
	return &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
}
