package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/experiments/childproc"
	"github.com/xds-workbench/lab/experiments/client"
	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
)

// identity is a loopback HTTP server that answers every request with its own name, so a
// request through Envoy proves which endpoint of the changed cluster served it.
type identity struct {
	name string
	port int
	srv  *http.Server
	done chan struct{}
}

// identityHeader carries the backend's name besides the body.
const identityHeader = "X-Bench-Backend"

func startIdentity(name string) (*identity, error) {
	ln, err := loopback.Listen(0)
	if err != nil {
		return nil, fmt.Errorf("start backend %s: %w", name, err)
	}
	b := &identity{name: name, port: ln.Addr().(*net.TCPAddr).Port, done: make(chan struct{})}
	rpc := identityRPC(name)
	// HTTP/1 for Envoy's probes, h2c for the grpc-go clients' RPCs on the same port.
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	b.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
				rpc.ServeHTTP(w, r)
				return
			}
			w.Header().Set(identityHeader, name)
			_, _ = io.WriteString(w, name+"\n")
		}),
		ReadHeaderTimeout: 5 * time.Second,
		Protocols:         protocols,
	}
	go func() {
		defer close(b.done)
		_ = b.srv.Serve(ln)
	}()
	return b, nil
}

// identityRPC answers any unary call with the backend's name, as the HTTP path does, in
// the BytesValue the grpc client's front door returns as its body
// (experiments/grpcclient/frontdoor.go). grpc.Server.ServeHTTP is the bridge that lets
// the net/http server carry gRPC; grpc-go documents it as EXPERIMENTAL (server.go).
func identityRPC(name string) *grpc.Server {
	return grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		if err := stream.RecvMsg(&wrapperspb.StringValue{}); err != nil {
			return err
		}
		return stream.SendMsg(wrapperspb.Bytes([]byte(name + "\n")))
	}))
}

func (b *identity) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := b.srv.Shutdown(ctx); err != nil {
		_ = b.srv.Close()
	}
	<-b.done
}

// clients is the data plane of one configuration: one or more real Envoys or grpc-go
// clients (members of the fleet), one simulated Envoy, or K fan-out clients.
type clients struct {
	kind string // ClientEnvoy, ClientSim or "ack-only"
	k    int

	// Envoy or grpc-go: one member per process, each with its own node ID and listener.
	members []*member

	// Simulated and fan-out clients: one simulated client's state over K connections.
	sim    *client.Sim
	conns  []*grpc.ClientConn
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	runErr error
}

// member is one client of a fleet: a real Envoy, or a grpc-go client process
// (ClientGRPC) whose HTTP front door on listenerPort plays the Envoy listener's part.
type member struct {
	// node is the node ID Envoy sends (its bootstrap's node.id).
	node         string
	listenerPort int
	bootstrap    string // file name in the output directory
	// c is the client: a *client.Envoy or a *client.GRPC, started.
	c     client.Client
	http  *http.Client // data-plane probes, through this Envoy's listener
	admin *http.Client // this Envoy's admin endpoints
	// sotw: the Envoy speaks SotW (its slow teardown is expected: stop).
	sotw bool
	// exit is how stop went.
	exit EnvoyExit
}

// clientSpec says which data plane to start against a control plane.
type clientSpec struct {
	kind    string
	k       int
	mode    protocol.Mode
	xdsAddr string
	bin     envoy.Binary
	dir     string
	name    string // file stem, e.g. "sotw-uniform-N1000"
	// members are the Envoys to start (ClientEnvoy): one, with the default node ID and
	// today's file names, or K with their own node IDs; or the grpc-go clients
	// (ClientGRPC), each with its node ID.
	members []memberSpec
	// grpcCommand runs a grpc-go client (ClientGRPC).
	grpcCommand grpcclient.Command
	// freshConnections: every data-plane probe opens its own connection to Envoy.
	freshConnections bool
	// stopGrace is how long each Envoy gets to exit after /quitquitquit (stopGrace(N)).
	stopGrace time.Duration
	// onDemandClusters renders the bootstrap without cds_config (on-demand CDS).
	onDemandClusters bool
	// envoyStats is the bootstrap's stats setting (Options.EnvoyStats).
	envoyStats string
}

// stopGrace grows with what Envoy has to tear down. Delta: 10 s and a second more per
// 1,000 clusters. SotW also gets a term in N²: its teardown is quadratic (7,500, 15,000
// and 30,000 clusters: 0.97, 3.0 and 12.3 s from "main dispatch loop exited" to
// "exiting", delta 0.16, 0.35 and 0.56 s; docs/performance.md, "Why SotW Envoys take
// long to exit"): 1.4e-8 s x N² at N = 30,000, but from 0.8e-8 to over 5e-8 at
// N = 100,000 (a pointer-chasing walk, so it depends on where Envoy's allocator put the
// nodes). The grace allows 2e-8 s x N² (200 s more at N = 100,000); a SotW Envoy still
// tearing down after it is killed and recorded as such (member.stop).
func stopGrace(mode protocol.Mode, clusters int) time.Duration {
	g := 10*time.Second + time.Duration(clusters/1000)*time.Second
	if mode == protocol.SotW {
		n := float64(clusters)
		g += time.Duration(2e-8 * n * n * float64(time.Second))
	}
	return g
}

// memberSpec is one Envoy to start: its node ID ("" for the bootstrap's default) and
// the listener port its state puts the listener on.
type memberSpec struct {
	node         string
	listenerPort int
}

func startClients(ctx context.Context, s clientSpec) (*clients, error) {
	c := &clients{kind: s.kind, k: s.k}
	switch s.kind {
	case ClientEnvoy, ClientGRPC:
		start := startEnvoy
		if s.kind == ClientGRPC {
			start = startGRPC
		}
		for _, ms := range s.members {
			m, err := start(ctx, s, ms)
			if err != nil {
				_ = c.stop(ctx)
				return nil, err
			}
			c.members = append(c.members, m)
		}
		return c, nil
	case ClientSim, clientAckOnly:
	default:
		return nil, fmt.Errorf("unknown client %q", s.kind)
	}
	if err := c.startFanOut(ctx, s); err != nil {
		_ = c.stop(ctx)
		return nil, err
	}
	return c, nil
}

// startFanOut connects the simulated client (one state over K connections) or K
// ACK-only clients, each on a connection of its own, as separate Envoys would have.
func (c *clients) startFanOut(ctx context.Context, s clientSpec) error {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	if s.kind == ClientSim {
		sim, err := client.NewSim(client.SimOptions{Mode: s.mode, Addr: s.xdsAddr})
		if err != nil {
			return err
		}
		c.sim = sim
	}
	for i := 0; i < s.k; i++ {
		// gRPC clients refuse messages over 4 MB by default; a SotW CDS response passes
		// that at about 27,000 clusters. Accept what the control plane may send.
		conn, err := grpc.NewClient("passthrough:///"+s.xdsAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(controlplane.DefaultMaxSendMsgSize)))
		if err != nil {
			return fmt.Errorf("dial %s: %w", s.xdsAddr, err)
		}
		c.conns = append(c.conns, conn)
		run := func(ctx context.Context) error { return c.sim.RunOn(ctx, conn) }
		if s.kind == clientAckOnly {
			ac := &ackClient{mode: s.mode, nodeID: resources.NodeID}
			run = func(ctx context.Context) error { return ac.run(ctx, conn) }
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			if err := run(rctx); err != nil {
				c.mu.Lock()
				if c.runErr == nil {
					c.runErr = err
				}
				c.mu.Unlock()
			}
		}()
	}
	return nil
}

// startEnvoy writes one Envoy's bootstrap and starts it. One Envoy keeps the file names
// the bench always used (bootstrap-<stem>.yaml, envoy-<stem>.log); each of K has its
// node ID in them.
func startEnvoy(ctx context.Context, s clientSpec, ms memberSpec) (*member, error) {
	stem := s.name
	if ms.node != "" {
		stem += "-" + ms.node
	}
	// The admin port is the kernel's choice (0), read back from Envoy's
	// --admin-address-path: free by construction, with no window for another process
	// to take it between choosing and binding.
	bs := filepath.Join(s.dir, "bootstrap-"+stem+".yaml")
	b := envoy.Bootstrap{Mode: s.mode, Path: bs,
		Params: bootstrap.Params{NodeID: ms.node, XDSAddr: s.xdsAddr, OnDemandClusters: s.onDemandClusters, Stats: s.envoyStats}}
	// One worker thread: the figures are per-thread work, comparable between runs on
	// machines with different core counts.
	e, err := client.NewEnvoy(client.EnvoyOptions{Bootstrap: b, ListenerPort: ms.listenerPort,
		Process: envoy.Options{Binary: s.bin, LogPath: filepath.Join(s.dir, "envoy-"+stem+".log"), ExtraArgs: []string{"--concurrency", "1"}, StopGrace: s.stopGrace}})
	if err == nil {
		err = e.Start(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("envoy %s: %w", orDefault(ms.node), err)
	}
	m := &member{
		node: ms.node, listenerPort: ms.listenerPort, bootstrap: filepath.Base(bs), c: e, sotw: s.mode == protocol.SotW,
		http:  &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1, DisableKeepAlives: s.freshConnections}},
		admin: &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}},
	}
	if err := m.quietEnvoy(ctx); err != nil {
		_ = m.stop(ctx)
		return nil, err
	}
	return m, nil
}

// startGRPC starts one grpc-go client process (SotW only: Options.validateGRPC) with
// its front door on the member's listener port and its output in
// grpc-<stem>-<node>.log.
func startGRPC(ctx context.Context, s clientSpec, ms memberSpec) (*member, error) {
	logName := "grpc-" + s.name + "-" + ms.node + ".log"
	g := client.NewGRPC(grpcclient.StartOptions{Command: s.grpcCommand, XDSAddr: s.xdsAddr, NodeID: ms.node,
		LogPath: filepath.Join(s.dir, logName), FrontDoorPort: ms.listenerPort}, nil)
	if err := g.Start(ctx); err != nil {
		return nil, fmt.Errorf("grpc client %s: %w", ms.node, err)
	}
	return &member{node: ms.node, listenerPort: ms.listenerPort, bootstrap: logName, c: g,
		http:  &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1}},
		admin: &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}},
	}, nil
}

// envoy is the member's Envoy process (nil for a grpc-go client).
func (m *member) envoy() *envoy.Process {
	if e, ok := m.c.(*client.Envoy); ok {
		return e.Process()
	}
	return nil
}

// grpc is the member's grpc-go client process (nil for an Envoy).
func (m *member) grpc() *grpcclient.Client {
	if g, ok := m.c.(*client.GRPC); ok {
		return g.Process()
	}
	return nil
}

// isGRPC reports whether the member is a grpc-go client.
func (m *member) isGRPC() bool { return m.c.Kind() == client.KindGRPC }

// kindName names the member's client in messages.
func (m *member) kindName() string {
	if m.isGRPC() {
		return "grpc client"
	}
	return "envoy"
}

// exited is closed once the member's process has exited; exitErr then says how.
func (m *member) exited() <-chan struct{} { return m.c.Exited() }

func (m *member) exitErr() error { return m.c.Err() }

// rss is the member process's resident set size in bytes.
func (m *member) rss() (int64, error) {
	if e := m.envoy(); e != nil {
		return e.RSS()
	}
	return childproc.RSS(m.c.(client.Process).PID())
}

// orDefault names a node in messages: its ID, or the bootstrap's default.
func orDefault(node string) string {
	if node == "" {
		return bootstrap.DefaultNodeID
	}
	return node
}

// nodeID is the node ID the member's stream names.
func (p *member) nodeID() string { return orDefault(p.node) }

// quietEnvoy sets every Envoy logger to info, as in production. The process helper
// starts Envoy with config:debug, which in SotW writes three lines per cluster on every
// EDS update (30,000 lines an update at N = 10,000) and would bill that logging to SotW.
// It runs before the first publish, so no update is measured at debug level.
func (p *member) quietEnvoy(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+p.envoy().AdminAddr()+"/logging?level=info", nil)
	if err != nil {
		return fmt.Errorf("envoy %s log level: %w", p.nodeID(), err)
	}
	resp, err := p.admin.Do(req)
	if err != nil {
		return fmt.Errorf("envoy %s log level: %w", p.nodeID(), err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("envoy %s log level: POST /logging?level=info: HTTP %d", p.nodeID(), resp.StatusCode)
	}
	return nil
}

// err is the first client failure (a stream that broke), to explain a timeout.
func (c *clients) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runErr != nil {
		return c.runErr
	}
	for _, p := range c.members {
		select {
		case <-p.exited():
			return fmt.Errorf("%s %s exited: %v", p.kindName(), p.nodeID(), p.exitErr())
		default:
		}
	}
	return nil
}

// stop stops every Envoy (at once: each takes a moment to drain) and the simulated and
// fan-out clients; it returns once all of them are gone.
func (c *clients) stop(ctx context.Context) error {
	errs := make([]error, len(c.members))
	var wg sync.WaitGroup
	for i, p := range c.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.stop(ctx)
		}()
	}
	wg.Wait()
	if c.cancel != nil {
		c.cancel()
		c.wg.Wait()
	}
	for _, conn := range c.conns {
		_ = conn.Close()
	}
	return errors.Join(errs...)
}

// stop stops Envoy and records how. A SotW Envoy that had begun to shut down and was
// killed at the end of its grace is a recorded outcome, not a failure: its teardown is
// quadratic in N (stopGrace) and the configuration's figures were all in before it.
func (p *member) stop(ctx context.Context) error {
	start := time.Now()
	if p.isGRPC() {
		// A client still busy after the grace is killed (grpcclient.Client.Stop): like a
		// SotW Envoy's slow teardown, a recorded outcome once every figure is in, not a
		// failure (at N = 1,000 a CPU-starved client can take over its 5 s to exit).
		err := p.c.Stop(ctx)
		p.exit = EnvoyExit{MS: float64(time.Since(start).Microseconds()) / 1000, KilledInTeardown: err != nil, GRPC: true}
		p.http.CloseIdleConnections()
		return nil
	}
	err := p.c.Stop(ctx)
	p.exit = EnvoyExit{MS: float64(time.Since(start).Microseconds()) / 1000}
	p.http.CloseIdleConnections()
	var slow *envoy.SlowExitError
	if errors.As(err, &slow) && slow.ShutdownBegan && p.sotw {
		p.exit.KilledInTeardown = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("stop envoy %s: %w", p.nodeID(), err)
	}
	return nil
}

// exits is, per Envoy in start order, how it exited, once stop has returned.
func (c *clients) exits() []EnvoyExit {
	var out []EnvoyExit
	for _, p := range c.members {
		out = append(out, p.exit)
	}
	return out
}

// Answer is what one request through Envoy got.
type Answer struct {
	Status int `json:"status"`
	// Backend is the backend that answered ("" when Envoy answered itself, e.g. 503
	// before the cluster has endpoints, or 404 with no route).
	Backend string `json:"backend,omitempty"`
	// Server is the "server" header: the listener's server_name, "envoy" by default.
	Server string `json:"server,omitempty"`
}

func (a Answer) String() string {
	s := fmt.Sprintf("HTTP %d", a.Status)
	if a.Backend != "" {
		s += " from " + a.Backend
	} else {
		s += " from Envoy"
	}
	if a.Server != "" {
		s += ", server: " + a.Server
	}
	return s
}

// ask sends one request through Envoy. Any HTTP answer is an answer; the error is for
// requests that got none (or a backend answer that contradicts itself).
func (p *member) ask(ctx context.Context, path string) (Answer, error) {
	return p.askHost(ctx, "", path)
}

// askHost is ask with the Host header host ("" : the listener's address), as sent: with
// routes on demand Envoy fetches the virtual host "<route>/<host>".
func (p *member) askHost(ctx context.Context, host, path string) (Answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+loopback.Addr(p.listenerPort)+path, nil)
	if err != nil {
		return Answer{}, fmt.Errorf("build request %s: %w", path, err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return Answer{}, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	resp.Body.Close()
	a := Answer{Status: resp.StatusCode, Backend: resp.Header.Get(identityHeader), Server: resp.Header.Get("Server")}
	if p.isGRPC() {
		// The front door answers with the RPC's reply: the backend's name (identityRPC),
		// only when the RPC succeeded.
		a.Server = ""
		if resp.Header.Get(grpcclient.HeaderGRPCStatus) == "OK" {
			a.Backend = strings.TrimSpace(string(body))
			return a, nil
		}
	}
	if a.Backend != "" && strings.TrimSpace(string(body)) != a.Backend {
		return a, fmt.Errorf("body %q does not match %s %q", body, identityHeader, a.Backend)
	}
	return a, nil
}

// xdsWireStats are Envoy's byte counters of its connection to the control plane (the
// static cluster xds_cluster in the bootstrap): what actually crossed the socket, HTTP/2
// and gRPC framing included.
const (
	statRxBytes = "cluster.xds_cluster.upstream_cx_rx_bytes_total"
	statTxBytes = "cluster.xds_cluster.upstream_cx_tx_bytes_total"
)

// wire reads Envoy's xDS connection byte counters. One filtered /stats query still walks
// every stat, which takes seconds with 10,000 clusters, so it runs outside the measured
// windows and gets its own generous timeout.
func (p *member) wire(ctx context.Context) (rx, tx int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	q := "/stats?filter=" + url.QueryEscape(`^cluster\.xds_cluster\.upstream_cx_(rx|tx)_bytes_total$`)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.envoy().AdminAddr()+q, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("envoy wire bytes: %w", err)
	}
	resp, err := p.admin.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("envoy wire bytes: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return 0, 0, fmt.Errorf("envoy wire bytes: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("envoy wire bytes: HTTP %d", resp.StatusCode)
	}
	stats := envoy.ParseStats(body)
	rx, err1 := strconv.ParseInt(stats[statRxBytes], 10, 64)
	tx, err2 := strconv.ParseInt(stats[statTxBytes], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("envoy wire bytes: %s / %s: %w", statRxBytes, statTxBytes, err)
	}
	return rx, tx, nil
}

// pollInterval spaces data-plane probes. Each probe costs Envoy some CPU, which lands in
// the update's Envoy CPU figure, so probes are spaced rather than back to back; the
// resulting resolution of the publish-to-data-plane time is this interval.
//
// With K Envoys each is polled every K intervals (pollEvery) until its stream has ACKed
// the step, and every interval from then on: K Envoys polled every 2 ms throughout would
// add a core's worth of requests on two cores and slow the very updates they time,
// while the change shows in an Envoy's data plane around its ACK (Envoy applies a
// response, then ACKs it), which is where the resolution matters.
const pollInterval = 2 * time.Millisecond

// pollEvery is the interval between probes of one of k proxies before its ACK.
func pollEvery(k int) time.Duration { return time.Duration(max(k, 1)) * pollInterval }

// awaitProof polls path through this member's listener, every slow until acked is
// closed and every pollInterval after, until the answer proves the change, and returns
// that answer, when it came and how many requests it took: a 200 from backend (with the
// server header server, when given), or, with backend "", Envoy's own 404 (the route is
// gone).
func (p *member) awaitProof(ctx context.Context, path, backend, server string, slow time.Duration, acked <-chan struct{}) (Answer, time.Time, int, error) {
	want := "404 from Envoy"
	if backend != "" {
		want = backend
		if server != "" {
			want += " with server " + server
		}
	}
	ok := func(a Answer) bool {
		if backend == "" {
			return a.Status == http.StatusNotFound && a.Backend == ""
		}
		return a.Status == http.StatusOK && a.Backend == backend && (server == "" || a.Server == server)
	}
	return p.pollUntil(ctx, fmt.Sprintf("%s on %s", want, path), func() (Answer, error) { return p.ask(ctx, path) }, ok, slow, acked)
}

// awaitHost polls Host host, path every pollInterval until backend answers 200, and
// returns that answer, when it came and how many requests it took.
func (p *member) awaitHost(ctx context.Context, host, path, backend string) (Answer, time.Time, int, error) {
	return p.pollUntil(ctx, fmt.Sprintf("%s on Host %s %s", backend, host, path),
		func() (Answer, error) { return p.askHost(ctx, host, path) },
		func(a Answer) bool { return a.Status == http.StatusOK && a.Backend == backend },
		pollInterval, nil)
}

// pollUntil asks every slow until acked is closed (never, when nil) and every
// pollInterval after, until ok holds for an answer, and returns that answer, when it
// came and how many requests it took. It gives up when ctx ends or the member exits;
// what (the awaited answer and where) words the error.
func (p *member) pollUntil(ctx context.Context, what string, ask func() (Answer, error), ok func(Answer) bool, slow time.Duration, acked <-chan struct{}) (Answer, time.Time, int, error) {
	polls := 0
	var last error // set before every wait: the first request's outcome
	for {
		polls++
		got, err := ask()
		if err == nil && ok(got) {
			return got, time.Now(), polls, nil
		}
		if err != nil {
			last = err
		} else {
			last = fmt.Errorf("answered %s", got)
		}
		select {
		case <-ctx.Done():
			return Answer{}, time.Time{}, polls, fmt.Errorf("%s %s: waiting for %s after %d request(s): %w (last: %v)", p.kindName(), p.nodeID(), what, polls, ctx.Err(), last)
		case <-p.exited():
			return Answer{}, time.Time{}, polls, fmt.Errorf("%s %s exited while waiting for %s: %v", p.kindName(), p.nodeID(), what, p.exitErr())
		case <-acked:
			acked, slow = nil, pollInterval // poll at full rate from now on; check once more now
		case <-time.After(slow):
		}
	}
}

// awaitReady polls Envoy's /ready every pollInterval until it answers 200 (LIVE: its
// initial xDS fetches are done); finer than envoy.Process.WaitReady's 25 ms, since the
// time to ready is a figure here.
func (p *member) awaitReady(ctx context.Context) error {
	last := "no request sent"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.envoy().AdminAddr()+"/ready", nil)
		if err != nil {
			return fmt.Errorf("envoy %s /ready: %w", p.nodeID(), err)
		}
		resp, err := p.admin.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("HTTP %d", resp.StatusCode)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("envoy %s not ready: %w (last /ready: %s)", p.nodeID(), ctx.Err(), last)
		case <-p.c.Exited():
			return fmt.Errorf("envoy %s exited before ready: %v", p.nodeID(), p.c.Err())
		case <-time.After(pollInterval):
		}
	}
}
