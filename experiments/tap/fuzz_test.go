package tap

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/internal/adsfuzz"
	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// fuzzRecvLimit is the tap's receive limit under fuzzing (the control plane behind keeps
// its default, larger, so the tap is the one that refuses).
const fuzzRecvLimit = 64 << 10

// fuzzTap is a tap in front of a control plane, both on bufconn, built once per fuzz
// worker and never stopped, with a witness stream through the tap.
type fuzzTap struct {
	conn    *grpc.ClientConn
	log     *adsfuzz.Log
	rec     *xdslog.Recorder
	witness map[int64]bool
}

var (
	fuzzTapsMu sync.Mutex
	fuzzTaps   = map[string]*fuzzTap{}
)

// bufListen serves on a new bufconn listener and returns a client connection to it.
func bufListen(t *testing.T, serve func(net.Listener) error) (*bufconn.Listener, *grpc.ClientConn) {
	lis := bufconn.Listen(1 << 20)
	go func() { _ = serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufnet", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return lis, conn
}

// tapFor returns the worker's tap for a mode and cache, building it once.
func tapFor(t *testing.T, mode string, cache frontend.Cache) *fuzzTap {
	fuzzTapsMu.Lock()
	defer fuzzTapsMu.Unlock()
	key := mode + "/" + string(cache)
	if ft := fuzzTaps[key]; ft != nil {
		return ft
	}
	o := controlplane.Options{Mode: mode, Cache: cache, Recorder: xdslog.NewRecorder(&adsfuzz.Log{}, mode)}
	if mode == xdslog.ModeSotW {
		o.Versions, o.NackPolicy = controlplane.SotWDefaults(cache)
	}
	cp, err := controlplane.New(o)
	if err != nil {
		t.Fatalf("new control plane: %v", err)
	}
	if _, err := cp.Publish(context.Background(), resources.State{Version: "1", InventoryPort: 18080}); err != nil {
		t.Fatalf("publish: %v", err)
	}
	up := bufconn.Listen(1 << 20)
	go func() { _ = cp.Serve(up) }()
	ft := &fuzzTap{log: &adsfuzz.Log{}}
	ft.rec = xdslog.NewRecorder(ft.log, mode, xdslog.WithTap("127.0.0.1:18000"))
	tp, err := New(Config{Upstream: "127.0.0.1:18000", Dialer: bufDialer(up), MaxRecvMsgSize: fuzzRecvLimit,
		Recorder: func(m string) *xdslog.Recorder {
			if m != mode {
				return nil // a stream of the other protocol is not recorded
			}
			return ft.rec
		}})
	if err != nil {
		t.Fatalf("new tap: %v", err)
	}
	_, ft.conn = bufListen(t, tp.Serve)
	if ft.witness, err = adsfuzz.Witness(context.Background(), ft.conn, mode == xdslog.ModeDelta, ft.log, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	fuzzTaps[key] = ft
	return ft
}

// FuzzTapStream drives hostile streams of either protocol through the tap at a control
// plane of that protocol on either cache, and checks the tap's log and goroutines (see
// docs/reliability.md "Hostile clients: fuzzed streams").
func FuzzTapStream(f *testing.F) {
	for _, seed := range adsfuzz.Seeds {
		for head := range byte(4) {
			f.Add(append([]byte{head}, seed[1:]...))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := adsfuzz.Decode(data)
		mode, cache := xdslog.ModeSotW, frontend.SnapshotCache
		if s.Delta {
			mode = xdslog.ModeDelta
		}
		if s.Linear {
			cache = frontend.LinearCache
		}
		ft := tapFor(t, mode, cache)
		baseline := runtime.NumGoroutine()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		adsfuzz.Run(ctx, ft.conn, s, fuzzRecvLimit)
		if err := ft.check(baseline); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	})
}

// check checks what a script left behind once it ran.
func (ft *fuzzTap) check(baseline int) error {
	if err := adsfuzz.WaitGoroutines(baseline, 10*time.Second); err != nil {
		return err
	}
	if err := adsfuzz.WaitStreams(ft.rec, ft.witness, 10*time.Second); err != nil {
		return err
	}
	if err := adsfuzz.CheckLog(ft.log.Take(), ft.witness); err != nil {
		return fmt.Errorf("tap xds.log: %w", err)
	}
	return nil
}
