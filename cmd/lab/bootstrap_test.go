package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/bootstrap"
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
	for _, mode := range []string{"sotw", "delta"} {
		out, _, err := runLabArgs(t, "bootstrap", "--mode="+mode, "--xds-addr", "127.0.0.1:18001",
			"--admin-port", "0", "--node-id", "n1")
		require.NoError(t, err, mode)
		want, err := bootstrap.Render(mode, bootstrap.Params{NodeID: "n1", XDSAddr: "127.0.0.1:18001", AdminPort: 0})
		require.NoError(t, err)
		assert.Equal(t, string(want), out, "the command prints Render's output unchanged")
		assert.Contains(t, out, `id: "n1"`)
		assert.Contains(t, out, "port_value: 18001")
	}

	out, _, err := runLabArgs(t, "bootstrap", "--mode", "delta")
	require.NoError(t, err)
	assert.Contains(t, out, "api_type: DELTA_GRPC")
	assert.Contains(t, out, `id: "teaching-envoy"`)
	assert.Contains(t, out, "port_value: 9901")
	assert.Contains(t, out, "port_value: 18000")
}

func TestBootstrapCommandErrors(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"no mode":      {[]string{"bootstrap"}, `"mode"`},
		"bad mode":     {[]string{"bootstrap", "--mode", "grpc"}, `must be "sotw" or "delta"`},
		"non-loopback": {[]string{"bootstrap", "--mode", "sotw", "--xds-addr", "192.168.1.1:18000"}, "not loopback"},
		"admin port":   {[]string{"bootstrap", "--mode", "sotw", "--admin-port", "70000"}, "admin port"},
		"stray arg":    {[]string{"bootstrap", "--mode", "sotw", "extra"}, "unknown command"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			out, _, err := runLabArgs(t, c.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "\n", "main prints the error as one line")
			assert.Empty(t, out, "nothing half-rendered on stdout")
		})
	}
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
