package bench

// Go benchmarks of the hot paths behind `lab bench`:
//
//	go test -run '^$' -bench . -benchmem ./experiments/bench/
//
// BenchmarkSnapshot10k: building, snapshotting and hashing the scaled state at N = 10,000.
// BenchmarkRecorder: recording one send and one ACK in xds.log (to io.Discard), for a
// response of one resource and of 10,000, and the publish event of the whole state.
// BenchmarkRecorderOverhead: one publish and the simulated client's full ACK at
// N = 10,000 over bufconn, with the real recorder (writing a file, as `lab bench` does)
// and with a nil (no-op) recorder; the difference is the recorder's overhead.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/xds-workbench/lab/delta"
	"github.com/xds-workbench/lab/experiments/childproc"
	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/experiments/simclient/simclienttest"
	"github.com/xds-workbench/lab/shared/bufconntest"
	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/sotw"
)

const benchN = 10_000

func scaledState(version string, n, changedPort int) resources.State {
	return resources.State{Version: version, InventoryPort: 10_000, Clusters: n, EndpointPorts: map[int]int{0: changedPort}}
}

func BenchmarkSnapshot10k(b *testing.B) {
	st := scaledState("1", benchN, 10_001)
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			if _, err := resources.Build(st); err != nil {
				b.Fatal(err)
			}
		}
	})
	set, err := resources.Build(st)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("snapshot", func(b *testing.B) {
		for b.Loop() {
			if _, err := set.Snapshot(resources.UniformVersions("1")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("version-map", func(b *testing.B) {
		// What the library's own hashing of a snapshot costs (delta versions). Set.Snapshot
		// now fills the map from Build's hashes, so clear it to measure the library doing
		// the work it no longer has to do on a publish.
		snap, err := set.Snapshot(resources.UniformVersions("1"))
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			snap.VersionMap = nil
			if err := snap.ConstructVersionMap(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("all", func(b *testing.B) {
		for b.Loop() {
			set, err := resources.Build(st)
			if err != nil {
				b.Fatal(err)
			}
			snap, err := set.Snapshot(resources.UniformVersions("1"))
			if err != nil {
				b.Fatal(err)
			}
			if err := snap.ConstructVersionMap(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// sendResources is what a front end records for one response of n resources.
func sendResources(n int) []xdslog.Resource {
	out := make([]xdslog.Resource, n)
	for i := range out {
		out[i] = xdslog.Resource{Name: resources.ScaledClusterName(i), Version: "2", Hash: fmt.Sprintf("%064x", i)}
	}
	return out
}

func BenchmarkRecorder(b *testing.B) {
	// The publish event lists every resource of the state with its hash.
	pub := sendResources(2*benchN + 2)
	b.Run(fmt.Sprintf("publish/resources=%d", len(pub)), func(b *testing.B) {
		r := xdslog.NewRecorder(io.Discard, protocol.SotW)
		for b.Loop() {
			r.Publish("2", pub, []string{"EDS"})
		}
	})
	for _, n := range []int{1, benchN} {
		res := sendResources(n)
		bytes := n * 113 // about an EDS resource's share of a response
		b.Run(fmt.Sprintf("send/resources=%d", n), func(b *testing.B) {
			r := xdslog.NewRecorder(io.Discard, protocol.SotW)
			i := 0
			for b.Loop() {
				i++
				r.Send(1, "EDS", strconv.Itoa(i), "2", res, nil, bytes)
			}
		})
		b.Run(fmt.Sprintf("ack/resources=%d", n), func(b *testing.B) {
			r := xdslog.NewRecorder(io.Discard, protocol.SotW)
			i := 0
			for b.Loop() {
				b.StopTimer()
				i++
				nonce := strconv.Itoa(i)
				r.Send(1, "EDS", nonce, "2", res, nil, bytes)
				b.StartTimer()
				if e := r.Feedback(1, "EDS", xdslog.Feedback{Nonce: nonce, ClientVersion: "2"}); e.Event != xdslog.EventAck {
					b.Fatalf("feedback recorded %q, want ack", e.Event)
				}
			}
		})
	}
}

// scenario is a publisher and the transport serving its cache on a bufconn gRPC server,
// with one connected simulated client.
type scenario struct {
	pub    *publish.Publisher
	client *simclient.Client
	stop   func()
}

// startScenario starts the front end (rec may be nil: the no-op recorder) and a client,
// and returns once the server has read the client's first request, so the publish finds
// a parked watch as it does in `lab bench`.
// It wires the front end by hand rather than through controlplane.New: the Go
// benchmarks measure the library's transport alone, with the recorder optional and no
// stream limits, and need a hook on the stream's first read.
func startScenario(tb testing.TB, mode protocol.Mode, rec *xdslog.Recorder) *scenario {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cache := publish.NewSnapshotCache(nil)
	pub, err := publish.NewPublisher(publish.PublisherConfig{Cache: cache, Recorder: rec, Strategy: publish.Uniform})
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	var fe frontend.FrontEnd
	if mode == protocol.SotW {
		fe, err = sotw.New(ctx, sotw.Config{Cache: cache, Recorder: rec, Describe: pub.Describe})
	} else {
		fe, err = delta.New(ctx, delta.Config{Cache: cache, Recorder: rec, Describe: pub.Describe})
	}
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	firstRequest := make(chan struct{})
	var once sync.Once
	srv := grpc.NewServer(grpc.MaxSendMsgSize(64<<20), grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		return h(srv, &firstRecv{ServerStream: ss, onFirst: func() { once.Do(func() { close(firstRequest) }) }})
	}))
	fe.Register(srv)
	conn, err := bufconntest.Start(srv.Serve).NewClient(grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64 << 20)))
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	c, err := simclient.New(mode, resources.NodeID)
	if err != nil {
		tb.Fatal(err)
	}
	stopClient := simclienttest.Start(ctx, c, conn)
	select {
	case <-firstRequest:
	case <-time.After(30 * time.Second):
		tb.Fatal("the simulated client did not connect within 30s")
	}
	return &scenario{pub: pub, client: c, stop: func() {
		cancel()
		stopClient()
		_ = conn.Close()
		srv.Stop()
	}}
}

// firstRecv calls onFirst after the stream's first message has been read. A stream's
// RecvMsg is called from one goroutine only, so onFirst needs no lock of its own.
type firstRecv struct {
	grpc.ServerStream
	onFirst func()
}

func (s *firstRecv) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err == nil && s.onFirst != nil {
		s.onFirst()
		s.onFirst = nil
	}
	return err
}

// acceptedAll reports whether the client runs set: every resource of every type at its
// content hash (delta leaves unchanged types at their old labels, so labels are not
// compared).
func acceptedAll(set *resources.Set) func(simclient.State) bool {
	return func(s simclient.State) bool {
		for _, t := range resources.Types {
			if len(s.Accepted[t]) != set.ByType[t].Len() {
				return false
			}
			for _, r := range set.ByType[t].All() {
				if s.Accepted[t][r.Name].Hash != r.Hash {
					return false
				}
			}
		}
		return true
	}
}

// publishAndWait publishes set and waits until the client runs it; it returns the wall
// and process CPU time that took.
func publishAndWait(b *testing.B, sc *scenario, set *resources.Set) (wall, cpu time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c0, err := childproc.SelfCPU()
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if err := sc.pub.Publish(ctx, set); err != nil {
		b.Fatal(err)
	}
	if _, err := sc.client.WaitFor(ctx, acceptedAll(set)); err != nil {
		b.Fatal(err)
	}
	wall = time.Since(t0)
	c1, err := childproc.SelfCPU()
	if err != nil {
		b.Fatal(err)
	}
	return wall, c1 - c0
}

func newRecorder(b *testing.B, mode protocol.Mode, real bool) (*xdslog.Recorder, func()) {
	if !real {
		return nil, func() {}
	}
	f, err := os.Create(filepath.Join(b.TempDir(), "xds.log"))
	if err != nil {
		b.Fatal(err)
	}
	return xdslog.NewRecorder(f, mode), func() { f.Close() }
}

// abTimes accumulates the two variants of an A/B benchmark.
type abTimes struct {
	wall, cpu [2]time.Duration // [0] real recorder, [1] nil recorder
	n         int
}

func (t *abTimes) report(b *testing.B) {
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(t.n) }
	b.ReportMetric(per(t.wall[0]), "real-ms/op")
	b.ReportMetric(per(t.wall[1]), "nil-ms/op")
	b.ReportMetric(100*(per(t.wall[0])-per(t.wall[1]))/per(t.wall[1]), "overhead-%")
	b.ReportMetric(per(t.cpu[0]), "real-cpu-ms/op")
	b.ReportMetric(per(t.cpu[1]), "nil-cpu-ms/op")
	b.ReportMetric(100*(per(t.cpu[0])-per(t.cpu[1]))/per(t.cpu[1]), "cpu-overhead-%")
}

// BenchmarkRecorderOverhead times one publish of the scaled state at N = 10,000 until the
// simulated client has ACKed it (runs it), with the real recorder writing a file, as
// `lab bench` does, and with the nil (no-op) recorder. The two variants alternate inside
// every iteration, so drift on a shared machine hits both alike, and each timed publish
// starts after a forced GC, so a collection of the other variant's garbage never lands in
// its window (the recorder's own garbage is a few MB a publish against a heap of
// hundreds). The metrics are the mean of each variant and the overhead in percent, of
// wall time and of this process's CPU.
// The build is outside the timer (the builders do not depend on the recorder), which
// makes the overhead an upper bound relative to `lab bench`'s publish-to-ACK.
// "initial" pushes all 20,002 resources to a connected, empty client; "update" changes
// one endpoint of a client that runs the state (SotW with uniform versions re-sends
// everything, delta one resource).
func BenchmarkRecorderOverhead(b *testing.B) {
	for _, mode := range []protocol.Mode{protocol.SotW, protocol.Delta} {
		b.Run(mode.String()+"/initial", func(b *testing.B) {
			set, err := resources.Build(scaledState("1", benchN, 10_001))
			if err != nil {
				b.Fatal(err)
			}
			var t abTimes
			for b.Loop() {
				for k := 0; k < 2; k++ {
					v := (k + t.n) % 2 // alternate which variant goes first
					b.StopTimer()
					rec, closeLog := newRecorder(b, mode, v == 0)
					sc := startScenario(b, mode, rec)
					runtime.GC()
					b.StartTimer()
					w, c := publishAndWait(b, sc, set)
					b.StopTimer()
					t.wall[v] += w
					t.cpu[v] += c
					sc.stop()
					closeLog()
					b.StartTimer()
				}
				t.n++
			}
			t.report(b)
		})
		b.Run(mode.String()+"/update", func(b *testing.B) {
			var scs [2]*scenario
			for v := range scs {
				rec, closeLog := newRecorder(b, mode, v == 0)
				defer closeLog()
				scs[v] = startScenario(b, mode, rec)
				defer scs[v].stop()
				first, err := resources.Build(scaledState("1", benchN, 10_001))
				if err != nil {
					b.Fatal(err)
				}
				publishAndWait(b, scs[v], first)
			}
			var t abTimes
			version := 1
			for b.Loop() {
				// Every publish needs a new label and the other endpoint port; the build is
				// outside the timer.
				b.StopTimer()
				version++
				set, err := resources.Build(scaledState(strconv.Itoa(version), benchN, 10_001+version%2))
				if err != nil {
					b.Fatal(err)
				}
				for k := 0; k < 2; k++ {
					v := (k + t.n) % 2
					b.StopTimer()
					runtime.GC()
					b.StartTimer()
					w, c := publishAndWait(b, scs[v], set)
					t.wall[v] += w
					t.cpu[v] += c
				}
				t.n++
			}
			t.report(b)
		})
	}
}
