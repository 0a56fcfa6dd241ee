package benchcore

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
	Name string
	Port int
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
	b := &identity{Name: name, Port: ln.Addr().(*net.TCPAddr).Port, done: make(chan struct{})}
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

// Clients is the data plane of one configuration: one or more real Envoys or grpc-go
// clients (members of the fleet), one simulated Envoy, or K fan-out clients.
type Clients struct {
	kind string // ClientEnvoy, ClientSim or "ack-only"
	k    int

	// Envoy or grpc-go: one member per process, each with its own node ID and listener.
	Members []*Member

	// Simulated and fan-out clients: one simulated client's state over K connections.
	Sim    *client.Sim
	conns  []*grpc.ClientConn
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	runErr error
}

// Member is one client of a fleet: a real Envoy, or a grpc-go client process
// (ClientGRPC) whose HTTP front door on listenerPort plays the Envoy listener's part.
type Member struct {
	// Node is the node ID Envoy sends (its bootstrap's node.id).
	Node         string
	ListenerPort int
	Bootstrap    string // file name in the output directory
	// c is the client: a *client.Envoy or a *client.GRPC, started.
	c     client.Client
	Http  *http.Client // data-plane probes, through this Envoy's listener
	admin *http.Client // this Envoy's admin endpoints
	// sotw: the Envoy speaks SotW (its slow teardown is expected: stop).
	sotw bool
	// exit is how stop went.
	exit EnvoyExit
}

// ClientSpec says which data plane to start against a control plane.
type ClientSpec struct {
	Kind    string
	K       int
	Mode    protocol.Mode
	XdsAddr string
	Bin     envoy.Binary
	Dir     string
	Name    string // file stem, e.g. "sotw-uniform-N1000"
	// Members are the Envoys to start (ClientEnvoy): one, with the default node ID and
	// today's file names, or K with their own node IDs; or the grpc-go clients
	// (ClientGRPC), each with its node ID.
	Members []MemberSpec
	// GrpcCommand runs a grpc-go client (ClientGRPC).
	GrpcCommand grpcclient.Command
	// FreshConnections: every data-plane probe opens its own connection to Envoy.
	FreshConnections bool
	// StopGrace is how long each Envoy gets to exit after /quitquitquit (StopGrace(N)).
	StopGrace time.Duration
	// OnDemandClusters renders the bootstrap without cds_config (on-demand CDS).
	OnDemandClusters bool
	// EnvoyStats is the bootstrap's stats setting (Options.EnvoyStats).
	EnvoyStats string
}

// StopGrace grows with what Envoy has to tear down. Delta: 10 s and a second more per
// 1,000 clusters. SotW also gets a term in N²: its teardown is quadratic (7,500, 15,000
// and 30,000 clusters: 0.97, 3.0 and 12.3 s from "main dispatch loop exited" to
// "exiting", delta 0.16, 0.35 and 0.56 s; docs/performance.md, "Why SotW Envoys take
// long to exit"): 1.4e-8 s x N² at N = 30,000, but from 0.8e-8 to over 5e-8 at
// N = 100,000 (a pointer-chasing walk, so it depends on where Envoy's allocator put the
// nodes). The grace allows 2e-8 s x N² (200 s more at N = 100,000); a SotW Envoy still
// tearing down after it is killed and recorded as such (member.stop).
func StopGrace(mode protocol.Mode, clusters int) time.Duration {
	g := 10*time.Second + time.Duration(clusters/1000)*time.Second
	if mode == protocol.SotW {
		n := float64(clusters)
		g += time.Duration(2e-8 * n * n * float64(time.Second))
	}
	return g
}

// MemberSpec is one Envoy to start: its node ID ("" for the bootstrap's default) and
// the listener port its state puts the listener on.
type MemberSpec struct {
	Node         string
	ListenerPort int
}

func StartClients(ctx context.Context, s ClientSpec) (*Clients, error) {
	c := &Clients{kind: s.Kind, k: s.K}
	switch s.Kind {
	case ClientEnvoy, ClientGRPC:
		start := StartEnvoy
		if s.Kind == ClientGRPC {
			start = startGRPC
		}
		for _, ms := range s.Members {
			m, err := start(ctx, s, ms)
			if err != nil {
				_ = c.Stop(ctx)
				return nil, err
			}
			c.Members = append(c.Members, m)
		}
		return c, nil
	case ClientSim, ClientAckOnly:
	default:
		return nil, fmt.Errorf("unknown client %q", s.Kind)
	}
	if err := c.startFanOut(ctx, s); err != nil {
		_ = c.Stop(ctx)
		return nil, err
	}
	return c, nil
}

// startFanOut connects the simulated client (one state over K connections) or K
// ACK-only clients, each on a connection of its own, as separate Envoys would have.
func (c *Clients) startFanOut(ctx context.Context, s ClientSpec) error {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	if s.Kind == ClientSim {
		sim, err := client.NewSim(client.SimOptions{Mode: s.Mode, Addr: s.XdsAddr})
		if err != nil {
			return err
		}
		c.Sim = sim
	}
	for i := 0; i < s.K; i++ {
		// gRPC clients refuse messages over 4 MB by default; a SotW CDS response passes
		// that at about 27,000 clusters. Accept what the control plane may send.
		conn, err := grpc.NewClient("passthrough:///"+s.XdsAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(controlplane.DefaultMaxSendMsgSize)))
		if err != nil {
			return fmt.Errorf("dial %s: %w", s.XdsAddr, err)
		}
		c.conns = append(c.conns, conn)
		run := func(ctx context.Context) error { return c.Sim.RunOn(ctx, conn) }
		if s.Kind == ClientAckOnly {
			ac := &ackClient{mode: s.Mode, nodeID: resources.NodeID}
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

// StartEnvoy writes one Envoy's bootstrap and starts it. One Envoy keeps the file names
// the bench always used (bootstrap-<stem>.yaml, envoy-<stem>.log); each of K has its
// node ID in them.
func StartEnvoy(ctx context.Context, s ClientSpec, ms MemberSpec) (*Member, error) {
	stem := s.Name
	if ms.Node != "" {
		stem += "-" + ms.Node
	}
	// The admin port is the kernel's choice (0), read back from Envoy's
	// --admin-address-path: free by construction, with no window for another process
	// to take it between choosing and binding.
	bs := filepath.Join(s.Dir, "bootstrap-"+stem+".yaml")
	b := envoy.Bootstrap{Mode: s.Mode, Path: bs,
		Params: bootstrap.Params{NodeID: ms.Node, XDSAddr: s.XdsAddr, OnDemandClusters: s.OnDemandClusters, Stats: s.EnvoyStats}}
	// One worker thread: the figures are per-thread work, comparable between runs on
	// machines with different core counts.
	e, err := client.NewEnvoy(client.EnvoyOptions{Bootstrap: b, ListenerPort: ms.ListenerPort,
		Process: envoy.Options{Binary: s.Bin, LogPath: filepath.Join(s.Dir, "envoy-"+stem+".log"), ExtraArgs: []string{"--concurrency", "1"}, StopGrace: s.StopGrace}})
	if err == nil {
		err = e.Start(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("envoy %s: %w", orDefault(ms.Node), err)
	}
	m := &Member{
		Node: ms.Node, ListenerPort: ms.ListenerPort, Bootstrap: filepath.Base(bs), c: e, sotw: s.Mode == protocol.SotW,
		Http:  &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1, DisableKeepAlives: s.FreshConnections}},
		admin: &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}},
	}
	if err := m.quietEnvoy(ctx); err != nil {
		_ = m.Stop(ctx)
		return nil, err
	}
	return m, nil
}

// startGRPC starts one grpc-go client process (SotW only: Options.validateGRPC) with
// its front door on the member's listener port and its output in
// grpc-<stem>-<node>.log.
func startGRPC(ctx context.Context, s ClientSpec, ms MemberSpec) (*Member, error) {
	logName := "grpc-" + s.Name + "-" + ms.Node + ".log"
	g := client.NewGRPC(grpcclient.StartOptions{Command: s.GrpcCommand, XDSAddr: s.XdsAddr, NodeID: ms.Node,
		LogPath: filepath.Join(s.Dir, logName), FrontDoorPort: ms.ListenerPort}, nil)
	if err := g.Start(ctx); err != nil {
		return nil, fmt.Errorf("grpc client %s: %w", ms.Node, err)
	}
	return &Member{Node: ms.Node, ListenerPort: ms.ListenerPort, Bootstrap: logName, c: g,
		Http:  &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1}},
		admin: &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}},
	}, nil
}

// Envoy is the member's Envoy process (nil for a grpc-go client).
func (m *Member) Envoy() *envoy.Process {
	if e, ok := m.c.(*client.Envoy); ok {
		return e.Process()
	}
	return nil
}

// Grpc is the member's grpc-go client process (nil for an Envoy).
func (m *Member) Grpc() *grpcclient.Client {
	if g, ok := m.c.(*client.GRPC); ok {
		return g.Process()
	}
	return nil
}

// IsGRPC reports whether the member is a grpc-go client.
func (m *Member) IsGRPC() bool { return m.c.Kind() == client.KindGRPC }

// KindName names the member's client in messages.
func (m *Member) KindName() string {
	if m.IsGRPC() {
		return "grpc client"
	}
	return "envoy"
}

// Exited is closed once the member's process has exited; ExitErr then says how.
func (m *Member) Exited() <-chan struct{} { return m.c.Exited() }

func (m *Member) ExitErr() error { return m.c.Err() }

// Rss is the member process's resident set size in bytes.
func (m *Member) Rss() (int64, error) {
	if e := m.Envoy(); e != nil {
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

// NodeID is the node ID the member's stream names.
func (p *Member) NodeID() string { return orDefault(p.Node) }

// quietEnvoy sets every Envoy logger to info, as in production. The process helper
// starts Envoy with config:debug, which in SotW writes three lines per cluster on every
// EDS update (30,000 lines an update at N = 10,000) and would bill that logging to SotW.
// It runs before the first publish, so no update is measured at debug level.
func (p *Member) quietEnvoy(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+p.Envoy().AdminAddr()+"/logging?level=info", nil)
	if err != nil {
		return fmt.Errorf("envoy %s log level: %w", p.NodeID(), err)
	}
	resp, err := p.admin.Do(req)
	if err != nil {
		return fmt.Errorf("envoy %s log level: %w", p.NodeID(), err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("envoy %s log level: POST /logging?level=info: HTTP %d", p.NodeID(), resp.StatusCode)
	}
	return nil
}

// Err is the first client failure (a stream that broke), to explain a timeout.
func (c *Clients) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runErr != nil {
		return c.runErr
	}
	for _, p := range c.Members {
		select {
		case <-p.Exited():
			return fmt.Errorf("%s %s exited: %v", p.KindName(), p.NodeID(), p.ExitErr())
		default:
		}
	}
	return nil
}

// Stop stops every Envoy (at once: each takes a moment to drain) and the simulated and
// fan-out clients; it returns once all of them are gone.
func (c *Clients) Stop(ctx context.Context) error {
	errs := make([]error, len(c.Members))
	var wg sync.WaitGroup
	for i, p := range c.Members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.Stop(ctx)
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

// Stop stops Envoy and records how. A SotW Envoy that had begun to shut down and was
// killed at the end of its grace is a recorded outcome, not a failure: its teardown is
// quadratic in N (StopGrace) and the configuration's figures were all in before it.
func (p *Member) Stop(ctx context.Context) error {
	start := time.Now()
	if p.IsGRPC() {
		// A client still busy after the grace is killed (grpcclient.Client.Stop): like a
		// SotW Envoy's slow teardown, a recorded outcome once every figure is in, not a
		// failure (at N = 1,000 a CPU-starved client can take over its 5 s to exit).
		err := p.c.Stop(ctx)
		p.exit = EnvoyExit{MS: float64(time.Since(start).Microseconds()) / 1000, KilledInTeardown: err != nil, GRPC: true}
		p.Http.CloseIdleConnections()
		return nil
	}
	err := p.c.Stop(ctx)
	p.exit = EnvoyExit{MS: float64(time.Since(start).Microseconds()) / 1000}
	p.Http.CloseIdleConnections()
	var slow *envoy.SlowExitError
	if errors.As(err, &slow) && slow.ShutdownBegan && p.sotw {
		p.exit.KilledInTeardown = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("stop envoy %s: %w", p.NodeID(), err)
	}
	return nil
}

// Exits is, per Envoy in start order, how it exited, once stop has returned.
func (c *Clients) Exits() []EnvoyExit {
	var out []EnvoyExit
	for _, p := range c.Members {
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

// Ask sends one request through Envoy. Any HTTP answer is an answer; the error is for
// requests that got none (or a backend answer that contradicts itself).
func (p *Member) Ask(ctx context.Context, path string) (Answer, error) {
	return p.AskHost(ctx, "", path)
}

// AskHost is ask with the Host header host ("" : the listener's address), as sent: with
// routes on demand Envoy fetches the virtual host "<route>/<host>".
func (p *Member) AskHost(ctx context.Context, host, path string) (Answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+loopback.Addr(p.ListenerPort)+path, nil)
	if err != nil {
		return Answer{}, fmt.Errorf("build request %s: %w", path, err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := p.Http.Do(req)
	if err != nil {
		return Answer{}, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	resp.Body.Close()
	a := Answer{Status: resp.StatusCode, Backend: resp.Header.Get(identityHeader), Server: resp.Header.Get("Server")}
	if p.IsGRPC() {
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

// Wire reads Envoy's xDS connection byte counters. One filtered /stats query still walks
// every stat, which takes seconds with 10,000 clusters, so it runs outside the measured
// windows and gets its own generous timeout.
func (p *Member) Wire(ctx context.Context) (rx, tx int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	q := "/stats?filter=" + url.QueryEscape(`^cluster\.xds_cluster\.upstream_cx_(rx|tx)_bytes_total$`)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.Envoy().AdminAddr()+q, nil)
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

// PollInterval spaces data-plane probes. Each probe costs Envoy some CPU, which lands in
// the update's Envoy CPU figure, so probes are spaced rather than back to back; the
// resulting resolution of the publish-to-data-plane time is this interval.
//
// With K Envoys each is polled every K intervals (PollEvery) until its stream has ACKed
// the step, and every interval from then on: K Envoys polled every 2 ms throughout would
// add a core's worth of requests on two cores and slow the very updates they time,
// while the change shows in an Envoy's data plane around its ACK (Envoy applies a
// response, then ACKs it), which is where the resolution matters.
const PollInterval = 2 * time.Millisecond

// PollEvery is the interval between probes of one of k proxies before its ACK.
func PollEvery(k int) time.Duration { return time.Duration(max(k, 1)) * PollInterval }

// AwaitProof polls path through this member's listener, every slow until acked is
// closed and every PollInterval after, until the answer proves the change, and returns
// that answer, when it came and how many requests it took: a 200 from backend (with the
// server header server, when given), or, with backend "", Envoy's own 404 (the route is
// gone).
func (p *Member) AwaitProof(ctx context.Context, path, backend, server string, slow time.Duration, acked <-chan struct{}) (Answer, time.Time, int, error) {
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
	return p.pollUntil(ctx, fmt.Sprintf("%s on %s", want, path), func() (Answer, error) { return p.Ask(ctx, path) }, ok, slow, acked)
}

// AwaitHost polls Host host, path every PollInterval until backend answers 200, and
// returns that answer, when it came and how many requests it took.
func (p *Member) AwaitHost(ctx context.Context, host, path, backend string) (Answer, time.Time, int, error) {
	return p.pollUntil(ctx, fmt.Sprintf("%s on Host %s %s", backend, host, path),
		func() (Answer, error) { return p.AskHost(ctx, host, path) },
		func(a Answer) bool { return a.Status == http.StatusOK && a.Backend == backend },
		PollInterval, nil)
}

// pollUntil asks every slow until acked is closed (never, when nil) and every
// PollInterval after, until ok holds for an answer, and returns that answer, when it
// came and how many requests it took. It gives up when ctx ends or the member exits;
// what (the awaited answer and where) words the error.
func (p *Member) pollUntil(ctx context.Context, what string, ask func() (Answer, error), ok func(Answer) bool, slow time.Duration, acked <-chan struct{}) (Answer, time.Time, int, error) {
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
			return Answer{}, time.Time{}, polls, fmt.Errorf("%s %s: waiting for %s after %d request(s): %w (last: %v)", p.KindName(), p.NodeID(), what, polls, ctx.Err(), last)
		case <-p.Exited():
			return Answer{}, time.Time{}, polls, fmt.Errorf("%s %s exited while waiting for %s: %v", p.KindName(), p.NodeID(), what, p.ExitErr())
		case <-acked:
			acked, slow = nil, PollInterval // poll at full rate from now on; check once more now
		case <-time.After(slow):
		}
	}
}

// AwaitReady polls Envoy's /ready every PollInterval until it answers 200 (LIVE: its
// initial xDS fetches are done); finer than envoy.Process.WaitReady's 25 ms, since the
// time to ready is a figure here.
func (p *Member) AwaitReady(ctx context.Context) error {
	last := "no request sent"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.Envoy().AdminAddr()+"/ready", nil)
		if err != nil {
			return fmt.Errorf("envoy %s /ready: %w", p.NodeID(), err)
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
			return fmt.Errorf("envoy %s not ready: %w (last /ready: %s)", p.NodeID(), ctx.Err(), last)
		case <-p.c.Exited():
			return fmt.Errorf("envoy %s exited before ready: %v", p.NodeID(), p.c.Err())
		case <-time.After(PollInterval):
		}
	}
}
