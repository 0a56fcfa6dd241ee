package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/experiments/client"
	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/experiments/inventory"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// serveEnv is the teaching setup that WithEnvoy, WithInventory and ClientGRPC start
// beside the control plane, from the runner's building blocks: a real Envoy
// (experiments/client) on the bootstrap `lab bootstrap` renders, or grpc-go's client, and
// the backends v1 and v2 (experiments/inventory). Its files (bootstrap, Envoy's log, the access log, the
// backends' request logs) live in one temporary directory removed when serve ends; the
// evidence that stays is xds.log.
type serveEnv struct {
	dir       string
	accessLog string // "" without Envoy
	// client is Envoy, or grpc-go's client with --client grpc (nil: neither runs).
	client   client.Client
	backends []*inventory.Backend
	listener int
	http     *http.Client
	requests int
}

// serveHost is the Host `request` sends: the teaching virtual host's when routes are on
// demand (Envoy fetches "quote-route/quote"), else none (Go sends the listener address).
func serveHost(o resources.OnDemand) string {
	if o.VirtualHosts {
		return resources.QuoteHost
	}
	return ""
}

// serveQuotePath is what `request` asks for: the path the runner's probes use.
const serveQuotePath = resources.QuotePath + "?sku=paper"

// newServeEnv makes the directory; with Envoy the listener writes its access log there,
// so the state published must carry accessLog from version 1 on.
func newServeEnv(o Options) (*serveEnv, error) {
	if !o.WithEnvoy && !o.WithInventory && o.Client != ClientGRPC {
		return nil, nil
	}
	dir, err := os.MkdirTemp("", "lab-serve-")
	if err != nil {
		return nil, fmt.Errorf("serve: temp dir: %w", err)
	}
	e := &serveEnv{dir: dir, listener: o.ListenerPort,
		http: &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}}
	if o.WithEnvoy {
		e.accessLog = filepath.Join(dir, "access.log")
	}
	return e, nil
}

// start starts the backends, then Envoy pointed at xdsAddr, and says where they are.
func (e *serveEnv) start(ctx context.Context, o Options, bin envoy.Binary, xdsAddr string, out io.Writer) error {
	if o.WithInventory {
		for _, b := range []struct {
			name string
			port int
		}{{"v1", o.InventoryPort}, {"v2", o.V2Port}} {
			be, err := inventory.Start(b.name, b.port, filepath.Join(e.dir, "inventory-"+b.name+".log"))
			if err != nil {
				return err
			}
			e.backends = append(e.backends, be)
		}
		fmt.Fprintf(out, "inventory: v1 on %s, v2 on %s (port %d moves the traffic to v2)\n",
			e.backends[0].Addr(), e.backends[1].Addr(), e.backends[1].Port())
	}
	if o.Client == ClientGRPC {
		return e.startGRPC(ctx, o, xdsAddr, out)
	}
	if !o.WithEnvoy {
		return nil
	}
	// The same bootstrap `lab bootstrap --mode M --xds-addr ADDR --admin-port 0` prints:
	// its node ID is the default one, so serving another --node-id shows the wrong-node
	// fault.
	b := envoy.Bootstrap{Mode: o.Mode, Path: filepath.Join(e.dir, "bootstrap.yaml"),
		Params: bootstrap.Params{XDSAddr: xdsAddr, AdminPort: 0, OnDemandClusters: o.OnDemand.Clusters}}
	c, err := client.NewEnvoy(client.EnvoyOptions{Bootstrap: b, ListenerPort: o.ListenerPort,
		Process: envoy.Options{Binary: bin, LogPath: filepath.Join(e.dir, "envoy.log"), ExtraArgs: []string{"--concurrency", "1"}}})
	if err != nil {
		return err
	}
	if err := c.Start(ctx); err != nil {
		return err
	}
	e.client = c
	p := c.Process()
	fmt.Fprintf(out, "envoy: pid %d, admin http://%s, bootstrap as lab bootstrap --mode %s --xds-addr %s --admin-port 0 prints; listener %s (type request to send %s through it)\n",
		p.Pid(), p.AdminAddr(), o.Mode, xdsAddr, loopback.Addr(o.ListenerPort), serveQuotePath)
	return nil
}

// startGRPC starts grpc-go's client for node resources.NodeID (the node Envoy's bootstrap
// names), its front door on the listener port.
func (e *serveEnv) startGRPC(ctx context.Context, o Options, xdsAddr string, out io.Writer) error {
	cmd := o.GRPCCommand
	if cmd.Path == "" {
		var err error
		if cmd, err = grpcclient.LabCommand(); err != nil {
			return err
		}
	}
	g := client.NewGRPC(grpcclient.StartOptions{Command: cmd, XDSAddr: xdsAddr, NodeID: resources.NodeID,
		LogPath: filepath.Join(e.dir, "grpc-client.log"), FrontDoorPort: o.ListenerPort}, nil)
	if err := g.Start(ctx); err != nil {
		return err
	}
	e.client = g
	c := g.Process()
	fmt.Fprintf(out, "grpc client: pid %d, grpc-go's xDS client dialing %s; front door http://%s (type request to send %s through it as one RPC), CSDS on %s\n",
		c.Pid(), resources.ProxylessTarget, c.FrontDoor(), serveQuotePath, c.CSDSAddr())
	return nil
}

// stop stops the client first (its stream closes while the recorder still writes), then
// the backends, and removes the directory.
func (e *serveEnv) stop() {
	if e == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if e.client != nil {
		_ = e.client.Stop(ctx)
	}
	for _, b := range e.backends {
		_ = b.Stop(ctx)
	}
	_ = os.RemoveAll(e.dir)
}

// request sends GET /quote through Envoy (or the grpc client's front door) and returns
// the console line: who answered (the backend named in the body, which echoes the
// request ID), the status, and Envoy's response flags from its access log (the RPC's
// status for the grpc client). The result is recorded as a data-plane event.
func (e *serveEnv) request(ctx context.Context, rec *xdslog.Recorder, listenerPort int, host string) (string, error) {
	if e == nil || e.client == nil {
		return "", fmt.Errorf("request needs serve --with-envoy or --client grpc (or send curl http://%s%s yourself)", loopback.Addr(listenerPort), serveQuotePath)
	}
	e.requests++
	id := fmt.Sprintf("serve-%d", e.requests)
	sent := time.Now().UTC()
	grpc := e.client.Kind() == client.KindGRPC
	ev := xdslog.Event{Event: xdslog.EventDataPlane, RequestID: id, Client: string(e.client.Kind()), Path: serveQuotePath, Probe: xdslog.ProbeRequest, Host: host, SentTS: &sent}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+loopback.Addr(e.listener)+serveQuotePath, nil)
	if err != nil {
		return "", err
	}
	if host != "" {
		req.Host = host
	}
	req.Header.Set("x-request-id", id)
	resp, err := e.http.Do(req)
	if err != nil {
		ev.TS = time.Now().UTC()
		ev.Error = err.Error()
		rec.Emit(ev)
		if grpc {
			return fmt.Sprintf("request %s: no response (%v): the grpc client's front door did not answer", id, err), nil
		}
		return fmt.Sprintf("request %s: no response (%v): Envoy has no listener yet, or it was NACKed", id, err), nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	ev.TS = time.Now().UTC()
	ev.Status = resp.StatusCode
	var q inventory.Quote
	if json.Unmarshal(body, &q) == nil && q.RequestID == id {
		ev.Backend = q.Backend
	}
	if grpc {
		ev.Upstream = resp.Header.Get(grpcclient.HeaderUpstream)
		rec.Emit(ev)
		rpc := resp.Header.Get(grpcclient.HeaderGRPCStatus)
		if m := resp.Header.Get(grpcclient.HeaderGRPCMessage); m != "" {
			rpc += " (" + m + ")"
		}
		return fmt.Sprintf("request %s: %d, %s, rpc %s", id, ev.Status, answeredBy(ev), rpc), nil
	}
	// The access log is flushed every 100 ms (envoy.Start's --file-flush-interval-msec).
	actx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	flags := "unknown (no access-log line)"
	if a, err := envoy.WaitAccess(actx, e.accessLog, id); err == nil {
		ev.Flags, ev.Upstream = a.Flags, a.UpstreamHost
		flags = serveOrDash(a.Flags)
	}
	rec.Emit(ev)
	return fmt.Sprintf("request %s: %d, %s, response flags %s", id, ev.Status, answeredBy(ev), flags), nil
}

// answeredBy names who answered a request: the backend and the endpoint it went to.
func answeredBy(ev xdslog.Event) string {
	if ev.Backend == "" {
		return "no backend answered"
	}
	who := "answered by " + ev.Backend
	if ev.Upstream != "" {
		who += " (" + ev.Upstream + ")"
	}
	return who
}
