package envoy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/resources"
)

// staticBootstrap is a self-contained Envoy config: listener -> route -> cluster
// "backend" on 127.0.0.1:BACKEND, with a file access log in resources.AccessLogFormat.
const staticBootstrap = `node: {id: test-envoy, cluster: test-cluster}
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
static_resources:
  listeners:
  - name: test-listener
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: test
          always_set_request_id_in_response: true
          access_log:
          - name: envoy.access_loggers.file
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog
              path: %s
              log_format:
                text_format_source:
                  inline_string: %s
          route_config:
            name: test-route
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {prefix: "/"}
                route: {cluster: backend}
          http_filters:
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
  clusters:
  - name: backend
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: backend
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}
`

// adsBootstrap points ADS at a port nobody serves: Envoy starts, never becomes ready,
// and keeps its xDS subscription stats (including version_text readouts) at zero.
const adsBootstrap = `node: {id: test-envoy, cluster: test-cluster}
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
dynamic_resources:
  ads_config:
    api_type: DELTA_GRPC
    transport_api_version: V3
    grpc_services: [{envoy_grpc: {cluster_name: xds_cluster}}]
  lds_config: {ads: {}, resource_api_version: V3}
  cds_config: {ads: {}, resource_api_version: V3}
static_resources:
  clusters:
  - name: xds_cluster
    type: STATIC
    connect_timeout: 1s
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {http2_protocol_options: {}}
    load_assignment:
      cluster_name: xds_cluster
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}
`

func yamlString(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s) // a JSON string is a valid YAML scalar
	require.NoError(t, err)
	return string(b)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

// startBackend serves 200 "hello" on 127.0.0.1 and returns its port.
func startBackend(t *testing.T) int {
	t.Helper()
	ln, err := loopback.Listen(0)
	require.NoError(t, err)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("x-backend-saw-id", r.Header.Get("x-request-id"))
			_, _ = io.WriteString(w, "hello")
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

func startEnvoy(t *testing.T, bin Binary, config string) *Process {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := Start(ctx, Options{
		Binary:     bin,
		ConfigPath: writeFile(t, "envoy.yaml", config),
		LogPath:    filepath.Join(t.TempDir(), "envoy.log"),
		ExtraArgs:  []string{"--concurrency", "1"},
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = p.Stop(ctx)
	})
	return p
}

// processGone reports whether pid no longer exists (it has been reaped).
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// getWithRetry sends GET until the listener accepts or the deadline passes.
func getWithRetry(ctx context.Context, t *testing.T, url, requestID string) *http.Response {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 5 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		require.NoError(t, err)
		req.Header.Set("x-request-id", requestID)
		resp, err := client.Do(req)
		if err == nil {
			return resp
		}
		select {
		case <-ctx.Done():
			t.Fatalf("GET %s: %v", url, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func TestEnvoyStaticRequestStatsDumpStop(t *testing.T) {
	bin := requireEnvoy(t)
	backendPort := startBackend(t)
	listenerPort, err := loopback.FreePort()
	require.NoError(t, err)
	t.Cleanup(func() { loopback.Release(listenerPort) })
	accessLog := filepath.Join(t.TempDir(), "access.log")
	config := fmt.Sprintf(staticBootstrap, listenerPort, yamlString(t, accessLog),
		yamlString(t, resources.AccessLogFormat), backendPort)

	p := startEnvoy(t, bin, config)
	_, _, err = loopback.ParseAddr(p.AdminAddr())
	require.NoError(t, err, "admin must be on 127.0.0.1")
	require.Positive(t, p.Pid())

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, p.WaitReady(ctx), "a static config is ready without xDS")
	assert.True(t, p.hasWorkers(), "a ready Envoy runs its worker thread (wrk:worker_0)")

	const id = "envoy-test-req-1"
	resp := getWithRetry(ctx, t, "http://"+loopback.Addr(listenerPort)+"/quote?sku=paper", id)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "hello", string(body))
	assert.Equal(t, id, resp.Header.Get("x-request-id"), "always_set_request_id_in_response echoes it")
	assert.Equal(t, id, resp.Header.Get("x-backend-saw-id"), "Envoy keeps the client's request id")

	entry, err := WaitAccess(ctx, accessLog, id)
	require.NoError(t, err)
	assert.Equal(t, 200, entry.Code)
	assert.Equal(t, "/quote?sku=paper", entry.Path)
	assert.Equal(t, "", entry.Flags)
	assert.Equal(t, "via_upstream", entry.Details)
	assert.Equal(t, loopback.Addr(backendPort), entry.UpstreamHost)
	assert.Equal(t, "backend", entry.UpstreamCluster)
	_, err = time.Parse(time.RFC3339Nano, entry.Time)
	assert.NoError(t, err, "START_TIME is RFC 3339")

	stats, err := p.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, "1", stats["server.live"])
	assert.Contains(t, stats, "server.uptime")
	assert.Equal(t, "1", stats["cluster.backend.upstream_rq_200"])
	rq, err := p.StatInt(ctx, "http.test.downstream_rq_2xx")
	require.NoError(t, err)
	assert.Equal(t, int64(1), rq)
	_, err = p.Stat(ctx, "no.such.stat")
	assert.ErrorIs(t, err, ErrNoStat)

	for _, eds := range []bool{false, true} {
		dump, err := p.ConfigDump(ctx, eds)
		require.NoError(t, err)
		var parsed struct {
			Configs []map[string]any `json:"configs"`
		}
		require.NoError(t, json.Unmarshal(dump, &parsed))
		assert.NotEmpty(t, parsed.Configs)
		if eds {
			assert.Contains(t, string(dump), "EndpointsConfigDump")
		}
	}

	cpu, err := p.CPUTime()
	require.NoError(t, err)
	assert.Positive(t, cpu, "Envoy burns some CPU starting up")
	rss, err := p.RSS()
	require.NoError(t, err)
	assert.Greater(t, rss, int64(1<<20))

	pid := p.Pid()
	require.NoError(t, p.Stop(ctx))
	select {
	case <-p.Exited():
	default:
		t.Fatal("Stop returned before Envoy exited")
	}
	assert.NoError(t, p.ExitErr(), "/quitquitquit exits 0")
	assert.True(t, processGone(pid), "pid %d still exists", pid)
	require.NoError(t, p.Stop(ctx), "Stop is idempotent")
	_, err = p.CPUTime()
	assert.Error(t, err)

	logBytes, err := os.ReadFile(p.LogPath())
	require.NoError(t, err)
	assert.Contains(t, string(logBytes), "starting main dispatch loop")
}

func TestEnvoyKillAndTextReadouts(t *testing.T) {
	bin := requireEnvoy(t)
	unused, err := loopback.FreePort()
	require.NoError(t, err)
	t.Cleanup(func() { loopback.Release(unused) })
	p := startEnvoy(t, bin, fmt.Sprintf(adsBootstrap, unused))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// /stats lists text readouts: version_text exists (empty) before any xDS response.
	v, err := p.Stat(ctx, "cluster_manager.cds.version_text")
	require.NoError(t, err)
	assert.Equal(t, "", v)
	stats, err := p.Stats(ctx)
	require.NoError(t, err)
	assert.Contains(t, stats, "listener_manager.lds.version_text")
	assert.Contains(t, stats, "cluster_manager.cds.update_attempt")
	assert.Equal(t, "0", stats["control_plane.connected_state"])

	// Not ready: the initial CDS/LDS fetch cannot complete.
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	err = p.WaitReady(short)
	cancelShort()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "503")

	pid := p.Pid()
	require.NoError(t, p.Kill())
	select {
	case <-p.Exited():
	case <-ctx.Done():
		t.Fatal("Envoy did not exit after SIGKILL")
	}
	var exitErr interface{ Sys() any }
	require.ErrorAs(t, p.ExitErr(), &exitErr)
	ws, ok := exitErr.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	assert.Equal(t, syscall.SIGKILL, ws.Signal())
	assert.True(t, processGone(pid))
	assert.NoError(t, p.Kill(), "Kill after exit is a no-op")
	assert.NoError(t, p.Stop(ctx), "Stop after Kill is a no-op")
}

func TestStartFailsOnBadConfig(t *testing.T) {
	bin := requireEnvoy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := Start(ctx, Options{Binary: bin, ConfigPath: writeFile(t, "bad.yaml", "node: {id: x}\nnot_a_field: 1\n")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exited during startup")
	assert.Contains(t, err.Error(), "not_a_field", "Envoy's reason is included")

	_, err = Start(ctx, Options{Binary: bin, ConfigPath: filepath.Join(t.TempDir(), "missing.yaml")})
	assert.ErrorContains(t, err, "bootstrap")
	_, err = Start(ctx, Options{ConfigPath: "x"})
	assert.ErrorContains(t, err, "no binary")
}

// TestStopKillsAnEnvoyThatNeverAnswers: a stopped (SIGSTOP) Envoy answers neither
// /quitquitquit nor SIGTERM; Stop kills it and says it never accepted the quit, which
// the bench tells apart from a SotW Envoy still tearing down (ShutdownBegan).
func TestStopKillsAnEnvoyThatNeverAnswers(t *testing.T) {
	bin := requireEnvoy(t)
	unused, err := loopback.FreePort()
	require.NoError(t, err)
	t.Cleanup(func() { loopback.Release(unused) })
	p := startEnvoy(t, bin, fmt.Sprintf(adsBootstrap, unused))
	p.stopGrace = 100 * time.Millisecond
	require.NoError(t, syscall.Kill(p.Pid(), syscall.SIGSTOP))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pid := p.Pid()
	err = p.Stop(ctx)
	var slow *SlowExitError
	require.ErrorAs(t, err, &slow)
	assert.False(t, slow.ShutdownBegan, "a stopped Envoy neither answers /quitquitquit nor stops its workers")
	assert.Equal(t, pid, slow.Pid)
	assert.Equal(t, fmt.Sprintf("stop envoy pid %d: ignored /quitquitquit and SIGTERM, killed", pid), err.Error())
	assert.True(t, processGone(pid))
}

func TestSlowExitErrorSaysWhetherShutdownBegan(t *testing.T) {
	e := &SlowExitError{Pid: 7, ShutdownBegan: true, Grace: 310 * time.Second}
	assert.Equal(t, "stop envoy pid 7: began to shut down but was still tearing down 5m10s after /quitquitquit (and 5s after SIGTERM), killed", e.Error())
}
