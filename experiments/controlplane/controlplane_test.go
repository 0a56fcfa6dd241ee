package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rsrc "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/shared/xdslog/xdslogtest"
)

var modes = []protocol.Mode{protocol.SotW, protocol.Delta}

func refusals(ev []xdslog.Event) []string {
	var out []string
	for _, e := range ev {
		if e.Event == xdslog.EventRefused {
			out = append(out, e.Error)
		}
	}
	return out
}

// waitRefused waits until the log has exactly one refused event, whose error contains
// every one of parts.
func waitRefused(t *testing.T, log *xdslogtest.Log, parts ...string) {
	t.Helper()
	log.WaitFor(t, 5*time.Second, "refused event", func(ev []xdslog.Event) bool {
		r := refusals(ev)
		if len(r) != 1 {
			return false
		}
		for _, part := range parts {
			if !strings.Contains(r[0], part) {
				return false
			}
		}
		return true
	})
}

// assertStatus asserts that err is a gRPC status with code and a message containing msg.
func assertStatus(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	assert.Equal(t, code, status.Code(err), "error: %v", err)
	assert.Contains(t, status.Convert(err).Message(), msg)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, timeout, 10*time.Millisecond, "waiting for %s", what)
}

// start runs a control plane on a free port with the teaching state published.
func start(t *testing.T, mode protocol.Mode, limits Limits) (*ControlPlane, *xdslogtest.Log) {
	t.Helper()
	log := &xdslogtest.Log{}
	cp, err := Start(context.Background(), Options{
		Mode:     mode,
		Addr:     "127.0.0.1:0",
		Recorder: xdslog.NewRecorder(log, mode),
		Limits:   limits,
	})
	require.NoError(t, err)
	t.Cleanup(cp.Stop)
	_, err = cp.Publish(context.Background(), resources.State{Version: "1", InventoryPort: 18080})
	require.NoError(t, err)
	return cp, log
}

func dial(t *testing.T, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// adsStream is one raw ADS stream in either protocol.
type adsStream struct {
	mode  protocol.Mode
	sotw  discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	delta discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
}

// open opens the stream of the given protocol (which need not be the server's).
func open(ctx context.Context, conn *grpc.ClientConn, mode protocol.Mode) (*adsStream, error) {
	c := discovery.NewAggregatedDiscoveryServiceClient(conn)
	s := &adsStream{mode: mode}
	var err error
	if mode == protocol.SotW {
		s.sotw, err = c.StreamAggregatedResources(ctx)
	} else {
		s.delta, err = c.DeltaAggregatedResources(ctx)
	}
	return s, err
}

// requestCDS sends a wildcard CDS request with the given resource names (nil: wildcard).
func (s *adsStream) requestCDS(names []string) error {
	node := &core.Node{Id: resources.NodeID, Cluster: "test"}
	if s.mode == protocol.SotW {
		return s.sotw.Send(&discovery.DiscoveryRequest{Node: node, TypeUrl: rsrc.ClusterType, ResourceNames: names})
	}
	return s.delta.Send(&discovery.DeltaDiscoveryRequest{Node: node, TypeUrl: rsrc.ClusterType, ResourceNamesSubscribe: names})
}

// recvClusters waits for one response and returns its type URL and cluster names.
func (s *adsStream) recvClusters() (string, []string, error) {
	var anys []*anypb.Any
	var typeURL string
	if s.mode == protocol.SotW {
		r, err := s.sotw.Recv()
		if err != nil {
			return "", nil, err
		}
		typeURL, anys = r.GetTypeUrl(), r.GetResources()
	} else {
		r, err := s.delta.Recv()
		if err != nil {
			return "", nil, err
		}
		typeURL = r.GetTypeUrl()
		for _, x := range r.GetResources() {
			anys = append(anys, x.GetResource())
		}
	}
	var names []string
	for _, a := range anys {
		c := &cluster.Cluster{}
		if err := a.UnmarshalTo(c); err != nil {
			return typeURL, nil, fmt.Errorf("decode cluster: %w", err)
		}
		names = append(names, c.GetName())
	}
	return typeURL, names, nil
}

// serveCDS opens a stream, asks for CDS and returns once the inventory cluster arrives,
// proving the server is handling the stream.
func serveCDS(t *testing.T, ctx context.Context, conn *grpc.ClientConn, mode protocol.Mode) *adsStream {
	t.Helper()
	s, err := open(ctx, conn, mode)
	require.NoError(t, err)
	require.NoError(t, s.requestCDS(nil))
	typeURL, names, err := s.recvClusters()
	require.NoError(t, err)
	require.Equal(t, rsrc.ClusterType, typeURL)
	require.Equal(t, []string{resources.ClusterName}, names)
	return s
}

func other(mode protocol.Mode) protocol.Mode {
	if mode == protocol.SotW {
		return protocol.Delta
	}
	return protocol.SotW
}

func TestServesAndRecords(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			cp, log := start(t, mode, Limits{})
			assert.Equal(t, mode, cp.FrontEnd().Mode())
			assert.Equal(t, "127.0.0.1:"+strconv.Itoa(cp.Port()), cp.Addr())
			assert.NotZero(t, cp.Port())
			assert.Same(t, cp.Recorder(), cp.Recorder())
			assert.Equal(t, DefaultLimits(), cp.Limits())
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn := dial(t, cp.Addr())
			serveCDS(t, ctx, conn, mode)

			ev := log.Events(t)
			require.NotEmpty(t, ev)
			assert.Equal(t, xdslog.EventPublish, ev[0].Event)
			assert.Equal(t, "1", ev[0].Version)
			for _, e := range ev {
				assert.Equal(t, mode, e.Mode)
			}
			for _, name := range []string{xdslog.EventStreamOpen, xdslog.EventRequest, xdslog.EventSend} {
				assert.Equal(t, 1, xdslogtest.Count(ev, name), "events %s", name)
			}
			for _, e := range ev {
				if e.Event == xdslog.EventSend {
					assert.Equal(t, "CDS", e.Type)
					require.Len(t, e.Resources, 1)
					assert.Equal(t, resources.ClusterName, e.Resources[0].Name)
				}
			}

			// The other protocol's method is refused, naming the bootstrap to use.
			wrong, err := open(ctx, conn, other(mode))
			require.NoError(t, err)
			_ = wrong.requestCDS(nil)
			_, _, err = wrong.recvClusters()
			assertStatus(t, err, codes.Unimplemented, "lab bootstrap --mode "+mode.String())
			waitRefused(t, log)
		})
	}
}

func TestPublishErrorNamesVersion(t *testing.T) {
	cp, log := start(t, protocol.SotW, Limits{})
	before := xdslogtest.Count(log.Events(t), xdslog.EventPublish)
	_, err := cp.Publish(context.Background(), resources.State{Version: "7", InventoryPort: 0})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "publish version 7:")
	assert.Equal(t, before, xdslogtest.Count(log.Events(t), xdslog.EventPublish), "a failed build publishes nothing")
	assert.Equal(t, "1", cp.Publisher().Current().Version)
}

func TestStartRefusesBadOptions(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port

	rec := func(mode protocol.Mode) *xdslog.Recorder { return xdslog.NewRecorder(&xdslogtest.Log{}, mode) }
	cases := []struct {
		name string
		o    Options
		want string
	}{
		{"bad mode", Options{Mode: "grpc", Recorder: rec("sotw")}, `unknown mode "grpc"`},
		{"no recorder", Options{Mode: "sotw", Addr: "127.0.0.1:0"}, "no recorder"},
		{"recorder mode", Options{Mode: "sotw", Addr: "127.0.0.1:0", Recorder: rec("delta")}, `recorder mode "delta"`},
		{"bad versions", Options{Mode: "sotw", Addr: "127.0.0.1:0", Recorder: rec("sotw"), Versions: "weekly"}, `unknown version strategy "weekly"`},
		{"bad nack policy", Options{Mode: "sotw", Addr: "127.0.0.1:0", Recorder: rec("sotw"), NackPolicy: "ignore"}, `unknown NACK policy "ignore"`},
		{"hold with delta", Options{Mode: "delta", Addr: "127.0.0.1:0", Recorder: rec("delta"), NackPolicy: "hold"}, "SotW option"},
		{"per-type with delta", Options{Mode: "delta", Addr: "127.0.0.1:0", Recorder: rec("delta"), Versions: "per-type"}, "SotW option"},
		{"any interface", Options{Mode: "sotw", Addr: "0.0.0.0:0", Recorder: rec("sotw")}, "not loopback"},
		{"host name", Options{Mode: "sotw", Addr: "example.com:0", Recorder: rec("sotw")}, "not loopback"},
		{"ipv6", Options{Mode: "delta", Addr: "[::1]:0", Recorder: rec("delta")}, "not loopback"},
		{"no port", Options{Mode: "sotw", Addr: "127.0.0.1", Recorder: rec("sotw")}, "missing port"},
		{"port range", Options{Mode: "sotw", Addr: "127.0.0.1:70000", Recorder: rec("sotw")}, "outside 1-65535"},
		{"port in use", Options{Mode: "sotw", Addr: "127.0.0.1:" + strconv.Itoa(busyPort), Recorder: rec("sotw")}, strconv.Itoa(busyPort)},
		{"negative limit", Options{Mode: "sotw", Addr: "127.0.0.1:0", Recorder: rec("sotw"), Limits: Limits{MaxStreams: -1}}, "max streams -1"},
		{"bad cache", Options{Mode: "sotw", Addr: "127.0.0.1:0", Recorder: rec("sotw"), Cache: "lru"}, `unknown cache "lru"`},
		{"linear uniform", Options{Mode: "sotw", Addr: "127.0.0.1:0", Recorder: rec("sotw"), Cache: "linear", Versions: "uniform"}, "version strategy uniform needs the snapshot cache"},
		{"linear resend", Options{Mode: "sotw", Addr: "127.0.0.1:0", Recorder: rec("sotw"), Cache: "linear", NackPolicy: "resend"}, "NACK policy resend needs the snapshot cache"},
		{"linear backoff", Options{Mode: "sotw", Addr: "127.0.0.1:0", Recorder: rec("sotw"), Cache: "linear", NackPolicy: "backoff"}, "NACK policy backoff needs the snapshot cache"},
		{"revert with delta", Options{Mode: "delta", Addr: "127.0.0.1:0", Recorder: rec("delta"), NackPolicy: "revert"}, "SotW option"},
		{"linear delta hold", Options{Mode: "delta", Addr: "127.0.0.1:0", Recorder: rec("delta"), Cache: "linear", NackPolicy: "hold"}, "SotW option"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cp, err := Start(context.Background(), tc.o)
			if cp != nil {
				cp.Stop()
			}
			require.Error(t, err)
			assert.Nil(t, cp)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n", "errors are one line")
		})
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Start(ctx, Options{Mode: "sotw", Addr: "127.0.0.1:0", Recorder: rec("sotw")})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestOversizedRequestRefused(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			cp, log := start(t, mode, Limits{MaxRecvMsgSize: 1024})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn := dial(t, cp.Addr())

			huge := make([]string, 200)
			for i := range huge {
				huge[i] = fmt.Sprintf("cluster-with-a-long-name-%04d", i)
			}
			s, err := open(ctx, conn, mode)
			require.NoError(t, err)
			require.NoError(t, s.requestCDS(huge))
			_, _, err = s.recvClusters()
			assertStatus(t, err, codes.ResourceExhausted, "larger than max")

			// The server keeps serving: a normal stream on the same connection works.
			serveCDS(t, ctx, conn, mode)
			waitRefused(t, log, "request refused", "max-recv-msg-bytes 1024")
		})
	}
}

func TestOversizedResponseFailsStream(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			cp, log := start(t, mode, Limits{MaxSendMsgSize: 64})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := open(ctx, dial(t, cp.Addr()), mode)
			require.NoError(t, err)
			require.NoError(t, s.requestCDS(nil))
			_, _, err = s.recvClusters()
			assertStatus(t, err, codes.ResourceExhausted, "larger than max")
			// The front end records the send before gRPC refuses it; the refusal follows.
			waitRefused(t, log, "response refused", "max-send-msg-bytes 64")
		})
	}
}

func TestMaxConcurrentStreamsPerConnection(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			cp, _ := start(t, mode, Limits{MaxConcurrentStreams: 1})
			conn := dial(t, cp.Addr())
			firstCtx, closeFirst := context.WithTimeout(context.Background(), 10*time.Second)
			defer closeFirst()
			serveCDS(t, firstCtx, conn, mode)

			// A second stream on the same connection waits for a free slot: with a short
			// deadline it never reaches the server.
			shortCtx, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancelShort()
			_, err := open(shortCtx, conn, mode)
			assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "error: %v", err)
			assert.Equal(t, 1, cp.ActiveStreams())

			// A waiting stream proceeds once the first one ends.
			type result struct {
				names []string
				err   error
			}
			done := make(chan result, 1)
			waitCtx, cancelWait := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancelWait()
			go func() {
				s, err := open(waitCtx, conn, mode)
				if err == nil {
					err = s.requestCDS(nil)
				}
				if err != nil {
					done <- result{err: err}
					return
				}
				_, names, err := s.recvClusters()
				done <- result{names, err}
			}()
			select {
			case r := <-done:
				t.Fatalf("second stream served while the first was open: %v %v", r.names, r.err)
			case <-time.After(300 * time.Millisecond):
			}
			closeFirst()
			select {
			case r := <-done:
				require.NoError(t, r.err)
				assert.Equal(t, []string{resources.ClusterName}, r.names)
			case <-time.After(10 * time.Second):
				t.Fatal("second stream not served after the first closed")
			}
		})
	}
}

func TestMaxStreamsRefusesExtra(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			cp, log := start(t, mode, Limits{MaxStreams: 2})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			// Separate connections: the bound is per process, not per connection.
			firstCtx, closeFirst := context.WithCancel(ctx)
			defer closeFirst()
			serveCDS(t, firstCtx, dial(t, cp.Addr()), mode)
			serveCDS(t, ctx, dial(t, cp.Addr()), mode)
			require.Equal(t, 2, cp.ActiveStreams())

			third := dial(t, cp.Addr())
			s, err := open(ctx, third, mode)
			require.NoError(t, err)
			_ = s.requestCDS(nil)
			_, _, err = s.recvClusters()
			assertStatus(t, err, codes.ResourceExhausted, "at most 2 ADS streams")
			r := refusals(log.Events(t))
			require.Len(t, r, 1)
			assert.Contains(t, r[0], "stream limit reached")

			// A freed slot is reusable.
			closeFirst()
			waitFor(t, 5*time.Second, "first stream to end", func() bool { return cp.ActiveStreams() == 1 })
			serveCDS(t, ctx, third, mode)
		})
	}
}

// pinger is a raw HTTP/2 client: gRPC clients clamp keepalive Time to at least 10s, so
// only a hand-written client can ping fast enough to break MinTime within a test.
type pinger struct {
	conn net.Conn
	fr   *http2.Framer
	mu   sync.Mutex // a Framer allows one writer at a time
}

func (p *pinger) ping(i int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fr.WritePing(false, [8]byte{byte(i)})
}

func newPinger(t *testing.T, addr string) *pinger {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(15*time.Second)))
	_, err = conn.Write([]byte(http2.ClientPreface))
	require.NoError(t, err)
	p := &pinger{conn: conn, fr: http2.NewFramer(conn, conn)}
	require.NoError(t, p.fr.WriteSettings())
	return p
}

// readUntil reads frames until a GOAWAY (returned) or until acks ping ACKs were seen
// (nil returned).
func (p *pinger) readUntil(t *testing.T, acks int) *http2.GoAwayFrame {
	t.Helper()
	seen := 0
	for {
		f, err := p.fr.ReadFrame()
		require.NoError(t, err)
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			return f
		case *http2.PingFrame:
			if f.IsAck() {
				seen++
				if acks > 0 && seen == acks {
					return nil
				}
			}
		case *http2.SettingsFrame:
			if !f.IsAck() {
				p.mu.Lock()
				err := p.fr.WriteSettingsAck()
				p.mu.Unlock()
				require.NoError(t, err)
			}
		}
	}
}

func TestKeepaliveTooManyPings(t *testing.T) {
	cp, _ := start(t, protocol.SotW, Limits{KeepaliveMinTime: 5 * time.Second})
	p := newPinger(t, cp.Addr())
	// No stream is open: PermitWithoutStream lets the pings through to the MinTime check,
	// which they break; the third strike earns a GOAWAY.
	for i := range 5 {
		require.NoError(t, p.ping(i))
	}
	ga := p.readUntil(t, 0)
	require.NotNil(t, ga)
	assert.Equal(t, http2.ErrCodeEnhanceYourCalm, ga.ErrCode)
	assert.Equal(t, "too_many_pings", string(ga.DebugData()))
	// The server then closes the connection.
	_, err := p.fr.ReadFrame()
	for err == nil {
		_, err = p.fr.ReadFrame()
	}
	var ne net.Error
	assert.False(t, errors.As(err, &ne) && ne.Timeout(), "connection not closed: %v", err)
}

func TestKeepalivePingsWithinPolicy(t *testing.T) {
	cp, _ := start(t, protocol.Delta, Limits{KeepaliveMinTime: 100 * time.Millisecond})
	p := newPinger(t, cp.Addr())
	// Pings slower than MinTime, with no stream open, are answered and never punished.
	go func() {
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for i := range 5 {
			<-tick.C
			if p.ping(i) != nil {
				return
			}
		}
	}()
	assert.Nil(t, p.readUntil(t, 5), "GOAWAY for pings within policy")
}

func TestStopIdempotentAndLeakFree(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			baseline := runtime.NumGoroutine()
			log := &xdslogtest.Log{}
			cp, err := Start(context.Background(), Options{Mode: mode, Addr: "127.0.0.1:0", Recorder: xdslog.NewRecorder(log, mode)})
			require.NoError(t, err)
			_, err = cp.Publish(context.Background(), resources.State{Version: "1", InventoryPort: 18080})
			require.NoError(t, err)
			conn, err := grpc.NewClient(cp.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s := serveCDS(t, ctx, conn, mode)

			stopped := make(chan struct{})
			go func() { cp.Stop(); close(stopped) }()
			select {
			case <-stopped:
			case <-time.After(10 * time.Second):
				t.Fatal("Stop did not return")
			}
			cp.Stop() // idempotent
			assert.Zero(t, cp.ActiveStreams())

			// The open stream ended and the port is closed.
			_, _, err = s.recvClusters()
			assert.Error(t, err)
			_, err = net.DialTimeout("tcp", cp.Addr(), time.Second)
			assert.Error(t, err, "listener still open after Stop")
			log.WaitFor(t, 5*time.Second, "stream_close event", func(ev []xdslog.Event) bool { return xdslogtest.Count(ev, xdslog.EventStreamClose) == 1 })

			require.NoError(t, conn.Close())
			cancel()
			waitFor(t, 5*time.Second, fmt.Sprintf("goroutines back to baseline %d", baseline), func() bool {
				return runtime.NumGoroutine() <= baseline+1
			})
		})
	}
}

func TestContextEndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cp, err := Start(ctx, Options{Mode: "delta", Addr: "127.0.0.1:0", Recorder: xdslog.NewRecorder(&xdslogtest.Log{}, "delta")})
	require.NoError(t, err)
	defer cp.Stop()
	c, err := net.DialTimeout("tcp", cp.Addr(), time.Second)
	require.NoError(t, err)
	_ = c.Close()
	cancel()
	waitFor(t, 5*time.Second, "listener to close after ctx end", func() bool {
		c, err := net.DialTimeout("tcp", cp.Addr(), time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	})
}
