package controlplane

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/experiments/inventory"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/shared/xdslog/xdslogtest"
)

// envoyOn starts real Envoy on a bootstrap for mode against cp and waits until it is ready.
func envoyOn(t *testing.T, mode protocol.Mode, cp *ControlPlane, p bootstrap.Params) *envoy.Process {
	t.Helper()
	bin := envoytest.Require(t)
	p.XDSAddr, p.AdminPort = cp.Addr(), 0
	bs, err := bootstrap.Render(mode, p)
	require.NoError(t, err)
	dir := t.TempDir()
	path := filepath.Join(dir, "bootstrap.yaml")
	require.NoError(t, os.WriteFile(path, bs, 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	proc, err := envoy.Start(ctx, envoy.Options{Binary: bin, ConfigPath: path, LogPath: filepath.Join(dir, "envoy.log"), ExtraArgs: []string{"--concurrency", "1"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = proc.Stop(context.Background()) })
	return proc
}

// get sends GET path with Host host through Envoy's listener.
func get(t *testing.T, port int, host, path string) (int, string, time.Duration) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+loopback.Addr(port)+path, nil)
	require.NoError(t, err)
	req.Host = host
	c := &http.Client{Timeout: 10 * time.Second}
	start := time.Now()
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body), time.Since(start)
}

// onDemandNames lists the names a log's requests of type typ subscribed, in order.
func subscribed(ev []xdslog.Event, typ string) []string {
	var out []string
	for _, e := range ev {
		if e.Event == xdslog.EventRequest && e.Type == typ {
			out = append(out, e.Added...)
		}
	}
	return out
}

// TestOnDemandWithEnvoy: with routes (VHDS) and clusters (on-demand CDS) on demand, real
// Envoy starts holding no virtual host and no cluster, fetches exactly the one virtual
// host, cluster and assignment a request needs, answers it from the right backend, and
// answers a host the state does not have with 404 at once (publish.OnDemandCache's
// not-found answer), under both library caches.
func TestOnDemandWithEnvoy(t *testing.T) {
	for _, cache := range []publish.Cache{publish.SnapshotCache, publish.LinearCache} {
		t.Run(string(cache), func(t *testing.T) {
			backend, err := inventory.Start("v1", 0, "")
			require.NoError(t, err)
			t.Cleanup(func() { _ = backend.Stop(context.Background()) })
			listenerPort, err := loopback.FreePort()
			require.NoError(t, err)
			log := &xdslogtest.Log{}
			od := resources.OnDemand{VirtualHosts: true, Clusters: true}
			cp, err := Start(context.Background(), Options{Mode: protocol.Delta, Addr: "127.0.0.1:0", Cache: cache, OnDemand: od, Recorder: xdslog.NewRecorder(log, protocol.Delta)})
			require.NoError(t, err)
			t.Cleanup(cp.Stop)
			_, err = cp.Publish(context.Background(), resources.State{Version: "1", InventoryPort: backend.Port(), ListenerPort: listenerPort, Clusters: 50, OnDemand: od})
			require.NoError(t, err)

			proc := envoyOn(t, protocol.Delta, cp, bootstrap.Params{OnDemandClusters: true})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			require.NoError(t, proc.WaitReady(ctx), "the listener warms without any virtual host")
			ev := log.Events(t)
			assert.Empty(t, subscribed(ev, "CDS"), "no cluster before traffic")
			for _, e := range ev {
				if e.Event == xdslog.EventSend && e.Type == "VHDS" {
					assert.Empty(t, e.Resources, "no virtual host before traffic")
					assert.Equal(t, []string{"quote-route/*"}, e.Removed, "the first VHDS answer only ends Envoy's wait")
				}
			}

			code, body, _ := get(t, listenerPort, resources.ServiceHost(7), resources.ScaledPath(7))
			assert.Equal(t, http.StatusOK, code, body)
			assert.Contains(t, body, "v1")
			ev = log.Events(t)
			assert.Equal(t, []string{"quote-route/svc-0007"}, subscribed(ev, "VHDS"))
			assert.Equal(t, []string{"inventory-0007"}, subscribed(ev, "CDS"))
			assert.Equal(t, []string{"inventory-0007"}, subscribed(ev, "EDS"))

			// Warm: nothing more is fetched.
			code, _, _ = get(t, listenerPort, resources.ServiceHost(7), resources.ScaledPath(7))
			assert.Equal(t, http.StatusOK, code)
			assert.Len(t, subscribed(log.Events(t), "VHDS"), 1)

			// A host the state does not have: 404 at once, not a request held forever.
			code, _, took := get(t, listenerPort, "svc-nope", "/quote")
			assert.Equal(t, http.StatusNotFound, code)
			assert.Less(t, took, 5*time.Second)
			var notFound []string
			for _, e := range log.Events(t) {
				for _, r := range e.Resources {
					if e.Event == xdslog.EventSend && r.NotFound {
						notFound = append(notFound, r.Name)
					}
				}
			}
			assert.Equal(t, []string{"quote-route/svc-nope"}, notFound, "%s", vhdsEvents(log.Events(t)))
			stats, err := proc.Stats(ctx)
			require.NoError(t, err)
			assert.Equal(t, "2", stats["cluster_manager.active_clusters"], "xds_cluster and inventory-0007: %v", filterStats(stats, "cluster_manager."))
		})
	}
}

func filterStats(stats map[string]string, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range stats {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

// TestOnDemandRefusedInSotW: the control plane refuses an on-demand shape in SotW up
// front, and real Envoy shows why: a SotW Envoy NACKs a route configuration that takes
// VHDS over ADS with its own error, recorded in xds.log.
func TestOnDemandRefusedInSotW(t *testing.T) {
	_, err := Start(context.Background(), Options{Mode: protocol.SotW, Addr: "127.0.0.1:0", OnDemand: resources.OnDemand{VirtualHosts: true},
		Recorder: xdslog.NewRecorder(io.Discard, protocol.SotW)})
	require.ErrorIs(t, err, resources.ErrOnDemandNeedsDelta)

	log := &xdslogtest.Log{}
	cp, err := Start(context.Background(), Options{Mode: protocol.SotW, Addr: "127.0.0.1:0", Recorder: xdslog.NewRecorder(log, protocol.SotW)})
	require.NoError(t, err)
	t.Cleanup(cp.Stop)
	listenerPort, err := loopback.FreePort()
	require.NoError(t, err)
	// The VHDS shape published anyway, past the refusal, to see Envoy's answer.
	set, err := resources.Build(resources.State{Version: "1", InventoryPort: 18080, ListenerPort: listenerPort, OnDemand: resources.OnDemand{VirtualHosts: true}})
	require.NoError(t, err)
	require.NoError(t, cp.PublishSet(context.Background(), set))
	envoyOn(t, protocol.SotW, cp, bootstrap.Params{})
	log.WaitFor(t, 30*time.Second, "Envoy's RDS NACK", func(ev []xdslog.Event) bool {
		return slices.ContainsFunc(ev, func(e xdslog.Event) bool { return e.Event == xdslog.EventNack && e.Type == "RDS" })
	})
	for _, e := range log.Events(t) {
		if e.Event == xdslog.EventNack {
			assert.Equal(t, "RDS", e.Type)
			assert.Contains(t, e.Error, "vhds: ADS must use DELTA_GRPC api_type when used as VHDS config source.", fmt.Sprint(e))
		}
	}
}

func vhdsEvents(ev []xdslog.Event) string {
	var b strings.Builder
	for _, e := range ev {
		if e.Type == "VHDS" {
			fmt.Fprintf(&b, "%s nonce=%s added=%v removed=%v res=%+v\n", e.Event, e.Nonce, e.Added, e.Removed, e.Resources)
		}
	}
	return b.String()
}
