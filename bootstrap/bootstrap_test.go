package bootstrap_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xds-workbench/lab/bootstrap"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
)

var params = bootstrap.Params{XDSAddr: "127.0.0.1:18000", AdminPort: 9901}

func TestModesDifferOnlyInAPIType(t *testing.T) {
	sotw, err := bootstrap.Render(protocol.SotW, params)
	require.NoError(t, err)
	delta, err := bootstrap.Render(protocol.Delta, params)
	require.NoError(t, err)

	s := strings.Split(string(sotw), "\n")
	d := strings.Split(string(delta), "\n")
	require.Equal(t, len(s), len(d))
	var diffs []string
	for i := range s {
		if s[i] != d[i] {
			diffs = append(diffs, s[i]+" | "+d[i])
		}
	}
	assert.Equal(t, []string{"    api_type: GRPC |     api_type: DELTA_GRPC"}, diffs)
}

func TestRenderContent(t *testing.T) {
	out, err := bootstrap.Render(protocol.Delta, params)
	require.NoError(t, err)
	y := string(out)
	assert.True(t, strings.HasPrefix(y, "node:\n"), "template comment is stripped:\n%s", y)
	for _, want := range []string{
		`id: "teaching-envoy"`,
		`cluster: "teaching-cluster"`,
		"port_value: 9901",
		"transport_api_version: V3",
		"cluster_name: xds_cluster",
		"resource_api_version: V3",
		"envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
		"http2_protocol_options: {}",
		"connect_timeout: 1s",
		"address: 127.0.0.1\n                port_value: 18000",
	} {
		assert.Contains(t, y, want)
	}
	assert.NotContains(t, y, "access_log_path", "deprecated admin field")
	assert.NotContains(t, y, "0.0.0.0")
	assert.NotContains(t, y, "<no value>")

	custom, err := bootstrap.Render(protocol.SotW, bootstrap.Params{NodeID: "n-2", NodeCluster: "c.2", XDSAddr: "127.0.0.1:18001", AdminPort: 0})
	require.NoError(t, err)
	assert.Contains(t, string(custom), `id: "n-2"`)
	assert.Contains(t, string(custom), `cluster: "c.2"`)
	assert.Contains(t, string(custom), "port_value: 0\n")
	assert.Contains(t, string(custom), "port_value: 18001\n")
}

func TestRenderRejectsBadInput(t *testing.T) {
	cases := map[string]struct {
		mode protocol.Mode
		p    bootstrap.Params
		want string
	}{
		"bad mode":        {"xds", params, `mode "xds"`},
		"empty mode":      {"", params, `must be "sotw" or "delta"`},
		"non-loopback":    {protocol.SotW, bootstrap.Params{XDSAddr: "10.0.0.1:18000"}, "not loopback"},
		"host name":       {protocol.SotW, bootstrap.Params{XDSAddr: "example.com:18000"}, "not loopback"},
		"wildcard":        {protocol.SotW, bootstrap.Params{XDSAddr: "0.0.0.0:18000"}, "not loopback"},
		"no port":         {protocol.SotW, bootstrap.Params{XDSAddr: "127.0.0.1"}, "xds address"},
		"empty addr":      {protocol.SotW, bootstrap.Params{}, "xds address"},
		"xds port 0":      {protocol.SotW, bootstrap.Params{XDSAddr: "127.0.0.1:0"}, "outside 1-65535"},
		"admin too big":   {protocol.Delta, bootstrap.Params{XDSAddr: "127.0.0.1:18000", AdminPort: 65536}, "admin port"},
		"admin negative":  {protocol.Delta, bootstrap.Params{XDSAddr: "127.0.0.1:18000", AdminPort: -1}, "admin port"},
		"yaml injection":  {protocol.Delta, bootstrap.Params{NodeID: "x\nadmin: {}", XDSAddr: "127.0.0.1:18000"}, "node id"},
		"bad cluster":     {protocol.Delta, bootstrap.Params{NodeCluster: "a b", XDSAddr: "127.0.0.1:18000"}, "node cluster"},
		"leading hyphen":  {protocol.Delta, bootstrap.Params{NodeID: "-x", XDSAddr: "127.0.0.1:18000"}, "node id"},
		"over 128 bytes ": {protocol.Delta, bootstrap.Params{NodeID: strings.Repeat("a", 129), XDSAddr: "127.0.0.1:18000"}, "node id"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := bootstrap.Render(c.mode, c.p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "\n", "one-line error")
		})
	}
}

// TestEnvoyValidates runs the real Envoy in validate mode on both rendered files.
func TestEnvoyValidates(t *testing.T) {
	bin := envoytest.Require(t)
	for _, mode := range []protocol.Mode{protocol.SotW, protocol.Delta} {
		for _, adminPort := range []int{0, 9901} {
			out, err := bootstrap.Render(mode, bootstrap.Params{XDSAddr: "127.0.0.1:18000", AdminPort: adminPort})
			require.NoError(t, err)
			res, err := validate(t, bin, out)
			require.NoError(t, err, "%s (admin %d): envoy --mode validate:\n%s", mode, adminPort, res)
			assert.Contains(t, res, "OK", mode)
		}
	}
}

// TestEnvoyRejectsBrokenBootstrap proves validate mode is a real check, not a rubber stamp.
func TestEnvoyRejectsBrokenBootstrap(t *testing.T) {
	bin := envoytest.Require(t)
	out, err := bootstrap.Render(protocol.SotW, params)
	require.NoError(t, err)
	broken := strings.Replace(string(out), "api_type: GRPC", "api_type: NOT_A_TYPE", 1)
	path := filepath.Join(t.TempDir(), "broken.yaml")
	require.NoError(t, os.WriteFile(path, []byte(broken), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := exec.CommandContext(ctx, bin.Path, "--mode", "validate", "-c", path, "--disable-hot-restart").CombinedOutput()
	require.Error(t, err, "envoy accepted a broken bootstrap:\n%s", res)
	assert.Contains(t, string(res), "NOT_A_TYPE")
}

// TestOnDemandClustersBootstrap: clusters on demand leave out cds_config (Envoy then
// never subscribes to CDS by wildcard), Envoy accepts the file, and SotW is refused.
func TestOnDemandClustersBootstrap(t *testing.T) {
	out, err := bootstrap.Render(protocol.Delta, bootstrap.Params{XDSAddr: "127.0.0.1:18000", OnDemandClusters: true})
	require.NoError(t, err)
	assert.NotContains(t, string(out), "cds_config")
	assert.Contains(t, string(out), "lds_config")
	_, err = bootstrap.Render(protocol.SotW, bootstrap.Params{XDSAddr: "127.0.0.1:18000", OnDemandClusters: true})
	require.ErrorIs(t, err, resources.ErrOnDemandNeedsDelta)

	res, err := validate(t, envoytest.Require(t), out)
	require.NoError(t, err, "envoy --mode validate:\n%s", res)
}

// validate runs Envoy in validate mode on a bootstrap and returns its output.
func validate(t *testing.T, bin envoy.Binary, bootstrap []byte) (string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bootstrap.yaml")
	require.NoError(t, os.WriteFile(path, bootstrap, 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := exec.CommandContext(ctx, bin.Path, "--mode", "validate", "-c", path, "--disable-hot-restart", "-l", "warning").CombinedOutput()
	return string(res), err
}

// vhdsListener is a static listener whose inline route configuration takes VHDS from a
// config source of the given api_type.
const vhdsListener = `  listeners:
  - name: vhds-static
    address: {socket_address: {address: 127.0.0.1, port_value: 0}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: vhds
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
          route_config:
            name: quote-route
            vhds:
              config_source:
                resource_api_version: V3
                api_config_source:
                  api_type: %s
                  transport_api_version: V3
                  grpc_services: [{envoy_grpc: {cluster_name: xds_cluster}}]
`

// TestEnvoyRefusesVHDSOverSotW records Envoy's own refusal of VHDS from a SotW (GRPC)
// config source, and its acceptance of DELTA_GRPC: the reason lab refuses an on-demand
// shape with --mode sotw (source/common/router/vhds.cc).
func TestEnvoyRefusesVHDSOverSotW(t *testing.T) {
	bin := envoytest.Require(t)
	for apiType, want := range map[string]string{
		"GRPC":       "vhds: only 'DELTA_GRPC' or 'ADS' (which uses Delta xDS) is supported as a config source.",
		"DELTA_GRPC": "OK",
	} {
		out, err := bootstrap.Render(protocol.Delta, bootstrap.Params{XDSAddr: "127.0.0.1:18000"})
		require.NoError(t, err)
		res, err := validate(t, bin, append(out, fmt.Sprintf(vhdsListener, apiType)...))
		assert.Equal(t, apiType == "DELTA_GRPC", err == nil, "%s: %s", apiType, res)
		assert.Contains(t, res, want, apiType)
	}
}

// TestStatsSettingBootstrap: no-scaled-clusters adds one stats_matcher exclusion of the
// scaled clusters' prefix in both modes (which still differ only in api_type), Envoy
// accepts the file, all (or "") leaves stats_config out, and an unknown value is refused.
func TestStatsSettingBootstrap(t *testing.T) {
	bin := envoytest.Require(t)
	p := bootstrap.Params{XDSAddr: "127.0.0.1:18000", Stats: bootstrap.StatsNoScaledClusters}
	sotw, err := bootstrap.Render(protocol.SotW, p)
	require.NoError(t, err)
	delta, err := bootstrap.Render(protocol.Delta, p)
	require.NoError(t, err)
	assert.Equal(t, strings.Replace(string(sotw), "api_type: GRPC", "api_type: DELTA_GRPC", 1), string(delta))
	for mode, out := range map[protocol.Mode][]byte{protocol.SotW: sotw, protocol.Delta: delta} {
		assert.Contains(t, string(out), `- prefix: "cluster.`+resources.ScaledClusterPrefix+`"`, mode)
		res, err := validate(t, bin, out)
		require.NoError(t, err, "%s: envoy --mode validate:\n%s", mode, res)
	}
	for _, s := range []string{"", bootstrap.StatsAll} {
		out, err := bootstrap.Render(protocol.Delta, bootstrap.Params{XDSAddr: "127.0.0.1:18000", Stats: s})
		require.NoError(t, err)
		assert.NotContains(t, string(out), "stats_config", "stats %q", s)
	}
	_, err = bootstrap.Render(protocol.Delta, bootstrap.Params{XDSAddr: "127.0.0.1:18000", Stats: "none"})
	require.EqualError(t, err, `unknown Envoy stats setting "none" (want all or no-scaled-clusters)`)
}
