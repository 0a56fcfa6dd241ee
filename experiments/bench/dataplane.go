package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/shared/loopback"
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
	b.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set(identityHeader, name)
			_, _ = io.WriteString(w, name+"\n")
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go func() {
		defer close(b.done)
		_ = b.srv.Serve(ln)
	}()
	return b, nil
}

func (b *identity) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := b.srv.Shutdown(ctx); err != nil {
		_ = b.srv.Close()
	}
	<-b.done
}

// clients is the data plane of one configuration: real Envoy, one simulated Envoy, or K
// fan-out clients.
type clients struct {
	kind string // ClientEnvoy, ClientSim or "ack-only"
	k    int

	// Envoy.
	proc         *envoy.Process
	listenerPort int
	http         *http.Client // data-plane probes, through Envoy's listener
	admin        *http.Client // Envoy's admin endpoints

	// Simulated and fan-out clients.
	sim    *simclient.Client
	conns  []*grpc.ClientConn
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	runErr error
}

// clientSpec says which data plane to start against a control plane.
type clientSpec struct {
	kind         string
	k            int
	mode         string
	xdsAddr      string
	bin          envoy.Binary
	dir          string
	name         string // file stem, e.g. "sotw-uniform-N1000"
	listenerPort int
	// freshConnections: every data-plane probe opens its own connection to Envoy.
	freshConnections bool
}

func startClients(ctx context.Context, s clientSpec) (*clients, error) {
	c := &clients{kind: s.kind, k: s.k, listenerPort: s.listenerPort}
	switch s.kind {
	case ClientEnvoy:
		cfg, err := bootstrap.Render(s.mode, bootstrap.Params{XDSAddr: s.xdsAddr})
		if err != nil {
			return nil, fmt.Errorf("render %s bootstrap: %w", s.mode, err)
		}
		bs := filepath.Join(s.dir, "bootstrap-"+s.name+".yaml")
		if err := os.WriteFile(bs, cfg, 0o644); err != nil {
			return nil, fmt.Errorf("write bootstrap: %w", err)
		}
		// One worker thread: the figures are per-thread work, comparable between runs on
		// machines with different core counts.
		p, err := envoy.Start(ctx, envoy.Options{Binary: s.bin, ConfigPath: bs, LogPath: filepath.Join(s.dir, "envoy-"+s.name+".log"), ExtraArgs: []string{"--concurrency", "1"}})
		if err != nil {
			return nil, err
		}
		c.proc = p
		c.http = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1, DisableKeepAlives: s.freshConnections}}
		c.admin = &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
		if err := c.quietEnvoy(ctx); err != nil {
			_ = c.stop(ctx)
			return nil, err
		}
		return c, nil
	case ClientSim, clientAckOnly:
	default:
		return nil, fmt.Errorf("unknown client %q", s.kind)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	if s.kind == ClientSim {
		sc, err := simclient.New(s.mode, resources.NodeID)
		if err != nil {
			cancel()
			return nil, err
		}
		c.sim = sc
	}
	for i := 0; i < s.k; i++ {
		// One connection per client, as separate Envoys would have.
		// gRPC clients refuse messages over 4 MB by default; a SotW CDS response passes
		// that at about 27,000 clusters. Accept what the control plane may send.
		conn, err := grpc.NewClient("passthrough:///"+s.xdsAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(controlplane.DefaultMaxSendMsgSize)))
		if err != nil {
			c.stop(ctx)
			return nil, fmt.Errorf("dial %s: %w", s.xdsAddr, err)
		}
		c.conns = append(c.conns, conn)
		run := func(ctx context.Context) error { return c.sim.Run(ctx, conn) }
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
	return c, nil
}

// quietEnvoy sets every Envoy logger to info, as in production. The process helper
// starts Envoy with config:debug, which in SotW writes three lines per cluster on every
// EDS update (30,000 lines an update at N = 10,000) and would bill that logging to SotW.
// It runs before the first publish, so no update is measured at debug level.
func (c *clients) quietEnvoy(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+c.proc.AdminAddr()+"/logging?level=info", nil)
	if err != nil {
		return fmt.Errorf("envoy log level: %w", err)
	}
	resp, err := c.admin.Do(req)
	if err != nil {
		return fmt.Errorf("envoy log level: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("envoy log level: POST /logging?level=info: HTTP %d", resp.StatusCode)
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
	if c.proc != nil {
		select {
		case <-c.proc.Exited():
			return fmt.Errorf("envoy exited: %v", c.proc.ExitErr())
		default:
		}
	}
	return nil
}

func (c *clients) stop(ctx context.Context) error {
	var errs []error
	if c.proc != nil {
		if err := c.proc.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
		c.http.CloseIdleConnections()
	}
	if c.cancel != nil {
		c.cancel()
		c.wg.Wait()
	}
	for _, conn := range c.conns {
		_ = conn.Close()
	}
	return errors.Join(errs...)
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
func (c *clients) ask(ctx context.Context, path string) (Answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+loopback.Addr(c.listenerPort)+path, nil)
	if err != nil {
		return Answer{}, fmt.Errorf("build request %s: %w", path, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return Answer{}, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	resp.Body.Close()
	a := Answer{Status: resp.StatusCode, Backend: resp.Header.Get(identityHeader), Server: resp.Header.Get("Server")}
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
func (c *clients) wire(ctx context.Context) (rx, tx int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	q := "/stats?filter=" + url.QueryEscape(`^cluster\.xds_cluster\.upstream_cx_(rx|tx)_bytes_total$`)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.proc.AdminAddr()+q, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("envoy wire bytes: %w", err)
	}
	resp, err := c.admin.Do(req)
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
const pollInterval = 2 * time.Millisecond

// awaitProof polls path until the answer proves the change and returns that answer,
// when it came and how many requests it took: a 200 from backend (with the server header
// server, when given), or, with backend "", Envoy's own 404 (the route is gone).
func (c *clients) awaitProof(ctx context.Context, path, backend, server string) (Answer, time.Time, int, error) {
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
	polls := 0
	var last error
	last = errors.New("no request sent")
	for {
		polls++
		got, err := c.ask(ctx, path)
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
			return Answer{}, time.Time{}, polls, fmt.Errorf("waiting for %s on %s after %d request(s): %w (last: %v)", want, path, polls, ctx.Err(), last)
		case <-c.proc.Exited():
			return Answer{}, time.Time{}, polls, fmt.Errorf("envoy exited while waiting for %s on %s: %v", want, path, c.proc.ExitErr())
		case <-time.After(pollInterval):
		}
	}
}
