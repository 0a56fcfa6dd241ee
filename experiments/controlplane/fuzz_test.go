package controlplane

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/internal/adsfuzz"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/shared/xdslog/xdslogtest"
)

// fuzzRecvLimit is the control plane's receive limit under fuzzing: small, so that a
// message at the limit is cheap to build and send.
const fuzzRecvLimit = 64 << 10

// fuzzPlane is one control plane served on bufconn for a whole fuzz worker (setup per
// input would dominate), with a witness stream that stays connected throughout.
type fuzzPlane struct {
	cp *ControlPlane
	adsfuzz.Target
}

var (
	fuzzPlanesMu sync.Mutex
	fuzzPlanes   = map[string]*fuzzPlane{}
)

// planeFor returns the worker's control plane for a mode and cache, building it once.
// It is never stopped: it lives as long as the fuzz worker process.
func planeFor(t *testing.T, mode protocol.Mode, cache publish.Cache) *fuzzPlane {
	fuzzPlanesMu.Lock()
	defer fuzzPlanesMu.Unlock()
	key := mode.String() + "/" + string(cache)
	if p := fuzzPlanes[key]; p != nil {
		return p
	}
	p := &fuzzPlane{Target: adsfuzz.Target{Log: &adsfuzz.Log{}}}
	o := Options{Mode: mode, Cache: cache, Recorder: xdslog.NewRecorder(p.Log, mode), Limits: Limits{MaxRecvMsgSize: fuzzRecvLimit}}
	if mode == protocol.SotW {
		o.Versions, o.NackPolicy = SotWDefaults(cache)
	}
	cp, err := New(o)
	if err != nil {
		t.Fatalf("new control plane: %v", err)
	}
	if _, err := cp.Publish(context.Background(), resources.State{Version: "1", InventoryPort: 18080}); err != nil {
		t.Fatalf("publish: %v", err)
	}
	p.cp, p.Rec = cp, cp.Recorder()
	if err := p.Serve(cp.Serve, mode == protocol.Delta); err != nil {
		t.Fatal(err)
	}
	fuzzPlanes[key] = p
	return p
}

// fuzzStream runs one fuzz input against the control plane for its script's cache and
// checks the invariants (see docs/reliability.md "Hostile clients: fuzzed streams").
func fuzzStream(t *testing.T, mode protocol.Mode, data []byte) {
	s := adsfuzz.Decode(data)
	s.Delta = mode == protocol.Delta
	cache := publish.SnapshotCache
	if s.Linear {
		cache = publish.LinearCache
	}
	if err := planeFor(t, mode, cache).Exercise(s, fuzzRecvLimit); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
}

// FuzzSotWStream drives hostile SotW streams at the snapshot and linear caches.
func FuzzSotWStream(f *testing.F) {
	for _, seed := range adsfuzz.Seeds {
		f.Add(seed)
		f.Add(append([]byte{2}, seed[1:]...)) // the same on the linear cache
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzStream(t, protocol.SotW, data) })
}

// FuzzDeltaStream drives hostile delta streams at the snapshot and linear caches.
func FuzzDeltaStream(f *testing.F) {
	for _, seed := range adsfuzz.Seeds {
		f.Add(seed)
		f.Add(append([]byte{2}, seed[1:]...))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzStream(t, protocol.Delta, data) })
}

// TestFuzzScriptReachesServer: a fuzz script's requests reach the front end (the
// fuzzer is not exercising only the client), a request exactly at the receive limit is
// served and one byte over it is not, and the invariants hold afterwards.
func TestFuzzScriptReachesServer(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			p := planeFor(t, mode, publish.SnapshotCache)
			p.Log.Take()
			baseline := runtime.NumGoroutine()
			cds := adsfuzz.Op{Kind: adsfuzz.Send, TypeURL: adsfuzz.TypeURLs[0], Names: []string{resources.ClusterName}}
			delta := mode == protocol.Delta
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			adsfuzz.Run(ctx, p.Conn, adsfuzz.Script{Delta: delta, Ops: []adsfuzz.Op{cds, {Kind: adsfuzz.SendAtLimit, TypeURL: adsfuzz.TypeURLs[1]}}}, fuzzRecvLimit)
			adsfuzz.Run(ctx, p.Conn, adsfuzz.Script{Delta: delta, Ops: []adsfuzz.Op{{Kind: adsfuzz.SendOverLimit, TypeURL: adsfuzz.TypeURLs[2]}}}, fuzzRecvLimit)
			require.NoError(t, adsfuzz.WaitGoroutines(baseline, 10*time.Second))
			require.NoError(t, adsfuzz.WaitStreams(p.cp.Recorder(), p.Witness, 10*time.Second))
			lines := p.Log.Take()
			require.NoError(t, adsfuzz.CheckLog(lines, p.Witness))
			ev, _, err := xdslog.Read(strings.NewReader(lines))
			require.NoError(t, err)
			requested := map[string]bool{}
			for _, e := range ev {
				if e.Event == xdslog.EventRequest {
					requested[e.Type] = true
				}
			}
			assert.True(t, requested["CDS"], "the CDS request is recorded")
			assert.True(t, requested["EDS"], "the request at the limit is served")
			assert.False(t, requested["LDS"], "the request over the limit is refused")
			assert.Equal(t, 1, xdslogtest.Count(ev, xdslog.EventRefused), "the request over the limit is refused")
		})
	}
}
