package gcpserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/experiments/testenv"
	"github.com/xds-workbench/lab/shared/loopback"
)

// serverBinary builds the integration server once per test binary.
func serverBinary(t *testing.T) string {
	t.Helper()
	testenv.SkipIfShort(t, testenv.NeedsLongRun) // go build of go-control-plane's server
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := BuildOnce(ctx)
	if err != nil {
		t.Fatalf("build the gcp integration server: %v", err)
	}
	return bin
}

func freePort(t *testing.T) int {
	t.Helper()
	p, err := loopback.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { loopback.Release(p) })
	return p
}

// Rig is one server + upstream + Envoy, Envoy dialling the server directly.
type rig struct {
	srv   *Server
	proxy *envoy.Process
	opts  Options
}

// rigConfig varies a rig: envoyNode, when set, is Envoy's node id instead of the
// server's -nodeID; edit changes the server's options.
type rigConfig struct {
	mode      XDSFlag
	mux       bool
	envoyNode string
	edit      func(*Options)
}

func startRig(t *testing.T, c rigConfig) *rig {
	t.Helper()
	bin := envoytest.Require(t)
	serverBin := serverBinary(t)
	const listeners = 3
	base, err := FreeBase(listeners)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { loopback.Release(base) })
	o := Options{
		Mode: c.mode, Mux: c.mux,
		Port: freePort(t), GatewayPort: freePort(t), ALSPort: freePort(t), UpstreamPort: freePort(t),
		BasePort: base, NodeID: "lab-gcp-" + string(c.mode),
		Updates: 2, Requests: 6, Delay: 250 * time.Millisecond,
		HTTPListeners: 1, ScopedHTTPListeners: 1, TCPListeners: 1, Clusters: 2,
	}
	if c.edit != nil {
		c.edit(&o)
	}
	envoyNode := o.NodeID
	if c.envoyNode != "" {
		envoyNode = c.envoyNode
	}
	up, err := StartUpstream(o.UpstreamPort, o.message())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := up.Close(); err != nil {
			t.Errorf("upstream: %v", err)
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv, err := Start(ctx, serverBin, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("stop gcp server: %v", err)
		}
		if t.Failed() {
			t.Logf("gcp server output:\n%s", srv.Output())
		}
	})

	dir := t.TempDir()
	boot, err := Bootstrap(ctx, BootstrapConfig{Mode: c.mode, XDSAddr: srv.Addr(), ALSAddr: loopback.Addr(o.ALSPort), AdminPort: freePort(t), NodeID: envoyNode})
	if err != nil {
		t.Fatal(err)
	}
	bootPath := filepath.Join(dir, "bootstrap.yaml")
	if err := os.WriteFile(bootPath, boot, 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "envoy.log")
	p, err := envoy.Start(ctx, envoy.Options{Binary: bin, ConfigPath: bootPath, LogPath: logPath,
		// The integration script's own setting: short drains keep listener updates quick.
		ExtraArgs: []string{"--concurrency", "1", "--drain-time-s", "1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		if err := p.Stop(sctx); err != nil {
			t.Errorf("stop envoy: %v", err)
		}
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("envoy log tail:\n%s", tail(strings.Split(strings.TrimSpace(string(b)), "\n"), 40))
			}
		}
	})
	return &rig{srv: srv, proxy: p, opts: o}
}

// TestEnvoyConvergesOnGCPServer runs go-control-plane's integration server against real
// Envoy in each mode and takes the server's own verdict: every snapshot had a request
// batch in which all listeners answered with the upstream's message, and it exited 0.
// Envoy's admin then holds the last snapshot's clusters and listeners.
func TestEnvoyConvergesOnGCPServer(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode XDSFlag
		mux  bool
	}{
		{"ads", ModeADS, false},
		{"delta-ads", ModeDeltaADS, false},
		{"ads-mux", ModeADS, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startRig(t, rigConfig{mode: tc.mode, mux: tc.mux})
			o := r.opts
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := r.srv.WaitPassed(ctx); err != nil {
				t.Fatalf("the server's own verdict: %v", err)
			}
			batches := r.srv.Batches()
			if len(batches) != o.Updates*o.Requests {
				t.Errorf("server logged %d request batches, want %d (-u %d × -r %d)", len(batches), o.Updates*o.Requests, o.Updates, o.Requests)
			}
			if n := PassedUpdates(batches); n != o.Updates {
				t.Errorf("snapshots with a passing batch = %d, want %d", n, o.Updates)
			}
			last := batches[len(batches)-1]
			if !last.Pass || last.Failed != 0 || last.OK != o.Listeners() {
				t.Errorf("last batch = %+v, want all %d listeners OK", last, o.Listeners())
			}

			dump, err := r.proxy.ConfigDump(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			lastV := fmt.Sprintf("v%d", o.Updates-1)
			for i := 0; i < o.Listeners(); i++ {
				if name := fmt.Sprintf(`"listener-%d"`, i); !strings.Contains(string(dump), name) {
					t.Errorf("Envoy's config dump has no %s", name)
				}
			}
			for i := 0; i < 2; i++ {
				if name := fmt.Sprintf(`"cluster-%s-%d"`, lastV, i); !strings.Contains(string(dump), name) {
					t.Errorf("Envoy's config dump has no %s (the last snapshot's cluster)", name)
				}
			}
			if n, err := r.proxy.StatInt(ctx, "cluster_manager.cds.update_success"); err != nil || n < int64(o.Updates) {
				t.Errorf("cds.update_success = %d (%v), want ≥ %d", n, err, o.Updates)
			}
			if n, err := r.proxy.StatInt(ctx, "listener_manager.lds.update_success"); err != nil || n < int64(o.Updates) {
				t.Errorf("lds.update_success = %d (%v), want ≥ %d", n, err, o.Updates)
			}
			for _, s := range []string{"cluster_manager.cds.update_rejected", "listener_manager.lds.update_rejected"} {
				if n, err := r.proxy.StatInt(ctx, s); err != nil || n != 0 {
					t.Errorf("%s = %d (%v), want 0", s, n, err)
				}
			}
			// For the record (no assertion): how many updates each xDS type took.
			if stats, err := r.proxy.Stats(ctx); err == nil {
				var parts []string
				for _, s := range []string{"cluster_manager.cds.update_success", "listener_manager.lds.update_success", "cluster_manager.cds.update_attempt", "listener_manager.lds.update_attempt", "control_plane.connected_state"} {
					parts = append(parts, s+"="+stats[s])
				}
				t.Logf("envoy: %s", strings.Join(parts, " "))
			}
		})
	}
}

// TestServerVerdictFailsWhenEnvoyIsAnotherNode checks the failure side of the signal:
// Envoy dials the server (its first request starts the run) but as a node the server
// has no snapshot for, so no listener ever comes up, every batch fails, and the server
// exits 1 after "failed all requests in a run 0".
func TestServerVerdictFailsWhenEnvoyIsAnotherNode(t *testing.T) {
	r := startRig(t, rigConfig{mode: ModeADS, envoyNode: "someone-else", edit: func(o *Options) {
		o.Updates, o.Requests, o.Delay = 1, 2, 100*time.Millisecond
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := r.srv.WaitPassed(ctx)
	if err == nil {
		t.Fatal("WaitPassed = nil, want the server's failure")
	}
	if !strings.Contains(err.Error(), "exit status 1") {
		t.Errorf("WaitPassed = %v, want exit status 1", err)
	}
	if _, err := r.srv.WaitLine(ctx, func(l string) bool { return strings.Contains(l, "failed all requests in a run 0") }); err != nil {
		t.Errorf("no failure line: %v", err)
	}
	for _, b := range r.srv.Batches() {
		if b.Pass || b.OK != 0 {
			t.Errorf("batch %+v passed with no config for Envoy's node", b)
		}
	}
}
