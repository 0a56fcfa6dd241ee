package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
)

// runLabArgs executes the CLI with args and returns stdout, stderr and the error.
func runLabArgs(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errOut.String(), err
}

func TestBootstrapCommand(t *testing.T) {
	for _, mode := range protocol.Modes {
		out, _, err := runLabArgs(t, "bootstrap", "--mode="+mode.String(), "--xds-addr", "127.0.0.1:18001",
			"--admin-port", "0", "--node-id", "n1")
		require.NoError(t, err, mode)
		want, err := bootstrap.Render(mode, bootstrap.Params{NodeID: "n1", XDSAddr: "127.0.0.1:18001", AdminPort: 0})
		require.NoError(t, err)
		assert.Equal(t, string(want), out, "the command prints Render's output unchanged")
		assert.Contains(t, out, `id: "n1"`)
		assert.Contains(t, out, "port_value: 18001")
	}

	out, _, err := runLabArgs(t, "bootstrap", "--mode", "delta", "--on-demand", "vhds,cds")
	require.NoError(t, err)
	assert.NotContains(t, out, "cds_config", "clusters on demand: no wildcard CDS")
	assert.Contains(t, out, "lds_config")
	out, _, err = runLabArgs(t, "bootstrap", "--mode", "delta", "--on-demand", "vhds")
	require.NoError(t, err)
	assert.Contains(t, out, "cds_config", "VHDS alone changes nothing in the bootstrap")

	out, _, err = runLabArgs(t, "bootstrap", "--mode", "delta")
	require.NoError(t, err)
	assert.Contains(t, out, "api_type: DELTA_GRPC")
	assert.Contains(t, out, `id: "teaching-envoy"`)
	assert.Contains(t, out, "port_value: 9901")
	assert.Contains(t, out, "port_value: 18000")
}

// TestBootstrapCommandErrors: each bad flag is one line "--flag VALUE: what is wrong"
// and nothing is printed.
func TestBootstrapCommandErrors(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"no mode":        {[]string{"bootstrap"}, "--mode: not given (want sotw or delta)"},
		"bad mode":       {[]string{"bootstrap", "--mode", "grpc"}, "--mode grpc: unknown protocol (want sotw or delta)"},
		"non-loopback":   {[]string{"bootstrap", "--mode", "sotw", "--xds-addr", "192.168.1.1:18000"}, "--xds-addr 192.168.1.1:18000: not loopback (only 127.0.0.1 or localhost is allowed)"},
		"xds port 0":     {[]string{"bootstrap", "--mode", "sotw", "--xds-addr", "127.0.0.1:0"}, "--xds-addr 127.0.0.1:0: port 0 is outside 1-65535"},
		"admin port":     {[]string{"bootstrap", "--mode", "sotw", "--admin-port", "70000"}, "--admin-port 70000: outside 0-65535"},
		"admin negative": {[]string{"bootstrap", "--mode", "sotw", "--admin-port", "-1"}, "--admin-port -1: outside 0-65535"},
		"admin word":     {[]string{"bootstrap", "--mode", "sotw", "--admin-port", "admin"}, "--admin-port admin: not a number (want a port, 0-65535)"},
		"on-demand word": {[]string{"bootstrap", "--mode", "delta", "--on-demand", "rds"}, `--on-demand rds: unknown part "rds" (want vhds, cds, vhds,cds or none)`},
		"on-demand sotw": {[]string{"bootstrap", "--mode", "sotw", "--on-demand", "cds"}, "--on-demand cds: " + resources.ErrOnDemandNeedsDelta.Error()},
		"stray arg":      {[]string{"bootstrap", "--mode", "sotw", "extra"}, "extra: unexpected argument (usage: lab bootstrap [flags])"},
		"node id":        {[]string{"bootstrap", "--mode", "sotw", "--node-id", "a b"}, `node id "a b": use 1-128 letters, digits, '.', '_' or '-'`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			out, _, err := runLabArgs(t, c.args...)
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
			assert.Empty(t, out, "nothing half-rendered on stdout")
		})
	}
}

// TestBootstrapLocalhost: localhost is accepted and rendered as 127.0.0.1, never left to
// Envoy's resolver (which may pick ::1).
func TestBootstrapLocalhost(t *testing.T) {
	out, _, err := runLabArgs(t, "bootstrap", "--mode", "sotw", "--xds-addr", "localhost:18001")
	require.NoError(t, err)
	assert.NotContains(t, out, "localhost")
	want, err := bootstrap.Render("sotw", bootstrap.Params{NodeID: bootstrap.DefaultNodeID, NodeCluster: bootstrap.DefaultNodeCluster,
		XDSAddr: "127.0.0.1:18001", AdminPort: bootstrap.DefaultAdminPort})
	require.NoError(t, err)
	assert.Equal(t, string(want), out)
}

func TestBootstrapExampleRuns(t *testing.T) {
	// Every `lab bootstrap ...` line of the Example must work as written (minus redirects).
	re := regexp.MustCompile(`(?m)^\s*lab (bootstrap[^>\n]*)`)
	matches := re.FindAllStringSubmatch(newBootstrapCmd().Example, -1)
	require.NotEmpty(t, matches)
	for _, m := range matches {
		_, _, err := runLabArgs(t, strings.Fields(m[1])...)
		assert.NoError(t, err, m[0])
	}
}
