// Package grpcclient runs grpc-go's own xDS client as a data plane beside Envoy: a
// proxyless gRPC client in a process of its own (`lab grpc-client`, started by the
// workbench), dialing xds:///<listener> against the workbench's control plane. It shows
// the workbench two things: an HTTP front door (as Envoy's listener) whose every request
// is one unary RPC through the xDS channel, so the route table routes gRPC too and the
// backend that answered is known; and grpc-go's own view of its resources through CSDS.
//
// One process per client, because grpc-go reads one bootstrap (so one node) per process,
// from the environment: GRPC_XDS_BOOTSTRAP_CONFIG
// (internal/xds/bootstrap/bootstrap.go, GetConfiguration), and CSDS
// (xds/csds/csds.go, buildClientStatusRespForReq -> xdsclient.DumpResources) reports
// the clients of that default pool only.
package grpcclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	v3statusgrpc "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/xds" // registers the xds:/// resolver, its balancers and HTTP filters
	"google.golang.org/grpc/xds/csds"

	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/resources"
)

// BootstrapEnv is the variable grpc-go reads its bootstrap JSON from
// (internal/envconfig/xds.go, XDSBootstrapFileContentEnv).
const BootstrapEnv = "GRPC_XDS_BOOTSTRAP_CONFIG"

// ErrNoDelta is why a grpc client is refused with delta xDS: grpc-go has no delta client.
var ErrNoDelta = errors.New("grpc-go speaks SotW only: its ADS stream opens " +
	"StreamAggregatedResources and never DeltaAggregatedResources (google.golang.org/grpc@v1.85.0 " +
	"internal/xds/clients/xdsclient/ads_stream.go, adsStreamImpl.runner)")

// DefaultRPCTimeout bounds one RPC through the front door.
const DefaultRPCTimeout = 2 * time.Second

// Options configure the child: what it dials and where it listens.
type Options struct {
	// Target is the xDS target dialed (resources.ProxylessTarget when empty).
	Target string
	// PortsFile receives the chosen addresses (Ports, JSON) once both listen.
	PortsFile string
	// FrontDoorPort and CSDSPort are loopback ports (0: free ones).
	FrontDoorPort, CSDSPort int
	// RPCTimeout bounds one RPC (DefaultRPCTimeout when 0).
	RPCTimeout time.Duration
}

// AddFlags binds o to flags: `lab grpc-client` and the test re-exec parse the same ones.
func (o *Options) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Target, "target", resources.ProxylessTarget, "xDS target to dial, xds:///<listener name>")
	f.StringVar(&o.PortsFile, "ports-file", "", "file to write the front door and CSDS addresses to, as JSON (required)")
	f.IntVar(&o.FrontDoorPort, "front-door-port", 0, "HTTP front door port on 127.0.0.1 (0: a free one)")
	f.IntVar(&o.CSDSPort, "csds-port", 0, "CSDS port on 127.0.0.1 (0: a free one)")
	f.DurationVar(&o.RPCTimeout, "rpc-timeout", DefaultRPCTimeout, "deadline of one RPC through the front door")
}

// Ports is what the child writes to its ports file.
type Ports struct {
	FrontDoor string `json:"front_door"`
	CSDS      string `json:"csds"`
	PID       int    `json:"pid"`
}

func (o Options) check() error {
	if o.PortsFile == "" {
		return errors.New("grpc-client: --ports-file is required")
	}
	if os.Getenv(BootstrapEnv) == "" {
		return fmt.Errorf("grpc-client: %s is empty: the workbench passes the bootstrap when it starts the client", BootstrapEnv)
	}
	for _, p := range []int{o.FrontDoorPort, o.CSDSPort} {
		if p != 0 {
			if err := loopback.ValidatePort(p); err != nil {
				return fmt.Errorf("grpc-client: %w", err)
			}
		}
	}
	if o.RPCTimeout < 0 {
		return fmt.Errorf("grpc-client: rpc timeout %s is negative", o.RPCTimeout)
	}
	return nil
}

// Serve runs the client until ctx ends: the xDS channel, CSDS and the front door.
func Serve(ctx context.Context, o Options) error {
	if err := o.check(); err != nil {
		return err
	}
	if o.Target == "" {
		o.Target = resources.ProxylessTarget
	}
	if o.RPCTimeout == 0 {
		o.RPCTimeout = DefaultRPCTimeout
	}
	conn, err := grpc.NewClient(o.Target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("grpc-client: dial %s: %w", o.Target, err)
	}
	defer conn.Close()
	// A new channel is idle until its first RPC; leave idle now, so the xDS client
	// subscribes at start as Envoy does, not on the first request.
	conn.Connect()

	csdsLis, csdsSrv, err := startCSDS(o.CSDSPort)
	if err != nil {
		return err
	}
	defer csdsSrv.Stop()
	doorLis, err := loopback.Listen(o.FrontDoorPort)
	if err != nil {
		return fmt.Errorf("grpc-client: front door: %w", err)
	}
	door := &http.Server{Handler: &frontDoor{conn: conn, timeout: o.RPCTimeout}, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 2)
	go func() { served <- door.Serve(doorLis) }()
	go func() { served <- csdsSrv.Serve(csdsLis) }()
	ports := Ports{FrontDoor: doorLis.Addr().String(), CSDS: csdsLis.Addr().String(), PID: os.Getpid()}
	if err := writePorts(o.PortsFile, ports); err != nil {
		_ = door.Close()
		return err
	}
	select {
	case <-ctx.Done():
	case err = <-served:
		err = fmt.Errorf("grpc-client: serve: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = door.Shutdown(sctx)
	return err
}

// startCSDS serves grpc-go's CSDS on a loopback port.
func startCSDS(port int) (net.Listener, *grpc.Server, error) {
	lis, err := loopback.Listen(port)
	if err != nil {
		return nil, nil, fmt.Errorf("grpc-client: csds: %w", err)
	}
	cs, err := csds.NewClientStatusDiscoveryServer()
	if err != nil {
		lis.Close()
		return nil, nil, fmt.Errorf("grpc-client: csds: %w", err)
	}
	srv := grpc.NewServer()
	v3statusgrpc.RegisterClientStatusDiscoveryServiceServer(srv, cs)
	return lis, srv, nil
}

// writePorts writes the ports file whole (temporary name, then rename), so the parent
// never reads half of it.
func writePorts(path string, p Ports) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("grpc-client: ports file: %w", err)
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("grpc-client: ports file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("grpc-client: ports file: %w", err)
	}
	return nil
}
