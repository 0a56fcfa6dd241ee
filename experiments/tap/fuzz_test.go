package tap

import (
	"context"
	"sync"
	"testing"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/internal/adsfuzz"
	"github.com/xds-workbench/lab/shared/bufconntest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// fuzzRecvLimit is the tap's receive limit under fuzzing (the control plane behind keeps
// its default, larger, so the tap is the one that refuses).
const fuzzRecvLimit = 64 << 10

// fuzzTaps are the worker's taps, each in front of a control plane, both on bufconn,
// built once per fuzz worker and never stopped, with a witness stream through the tap;
// the tap's own recorder and log are the ones checked.
var (
	fuzzTapsMu sync.Mutex
	fuzzTaps   = map[string]*adsfuzz.Target{}
)

// tapFor returns the worker's tap for a mode and cache, building it once.
func tapFor(t *testing.T, mode protocol.Mode, cache publish.Cache) *adsfuzz.Target {
	fuzzTapsMu.Lock()
	defer fuzzTapsMu.Unlock()
	key := mode.String() + "/" + string(cache)
	if ft := fuzzTaps[key]; ft != nil {
		return ft
	}
	o := controlplane.Options{Mode: mode, Cache: cache, Recorder: xdslog.NewRecorder(&adsfuzz.Log{}, mode)}
	if mode == protocol.SotW {
		o.Versions, o.NackPolicy = controlplane.SotWDefaults(cache)
	}
	cp, err := controlplane.New(o)
	if err != nil {
		t.Fatalf("new control plane: %v", err)
	}
	if _, err := cp.Publish(context.Background(), resources.State{Version: "1", InventoryPort: 18080}); err != nil {
		t.Fatalf("publish: %v", err)
	}
	up := bufconntest.Start(cp.Serve)
	ft := &adsfuzz.Target{Log: &adsfuzz.Log{}}
	ft.Rec = xdslog.NewRecorder(ft.Log, mode, xdslog.WithTap("127.0.0.1:18000"))
	tp, err := New(Config{Upstream: "127.0.0.1:18000", Dialer: up.ContextDialer, MaxRecvMsgSize: fuzzRecvLimit,
		Recorder: func(m protocol.Mode) *xdslog.Recorder {
			if m != mode {
				return nil // a stream of the other protocol is not recorded
			}
			return ft.Rec
		}})
	if err != nil {
		t.Fatalf("new tap: %v", err)
	}
	if err := ft.Serve(tp.Serve, mode == protocol.Delta); err != nil {
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
		mode, cache := protocol.SotW, publish.SnapshotCache
		if s.Delta {
			mode = protocol.Delta
		}
		if s.Linear {
			cache = publish.LinearCache
		}
		if err := tapFor(t, mode, cache).Exercise(s, fuzzRecvLimit); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	})
}
