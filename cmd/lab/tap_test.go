package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/loopback/loopbacktest"
	"github.com/xds-workbench/lab/shared/syncbuf"
)

// TestTapRefusesBadFlags: every bad flag is one line before anything starts, and no
// xds.log is created.
func TestTapRefusesBadFlags(t *testing.T) {
	down := loopbacktest.ClosedAddr(t)
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"no listen":      {[]string{"--upstream", "127.0.0.1:18000"}, "--listen: not given (want 127.0.0.1:PORT)"},
		"no upstream":    {[]string{"--listen", "127.0.0.1:0"}, "--upstream: not given (want 127.0.0.1:PORT, the control plane's address)"},
		"non-loopback":   {[]string{"--listen", "127.0.0.1:0", "--upstream", "10.1.2.3:18000"}, "--upstream 10.1.2.3:18000: not loopback (only 127.0.0.1 or localhost is allowed)"},
		"listen public":  {[]string{"--listen", "0.0.0.0:18100", "--upstream", "127.0.0.1:18000"}, "--listen 0.0.0.0:18100: not loopback (only 127.0.0.1 or localhost is allowed)"},
		"upstream port0": {[]string{"--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:0"}, "--upstream 127.0.0.1:0: port 0 is outside 1-65535"},
		"no port":        {[]string{"--listen", "127.0.0.1:0", "--upstream", "127.0.0.1"}, "--upstream 127.0.0.1: missing port in address (want 127.0.0.1:PORT)"},
		"itself":         {[]string{"--listen", "127.0.0.1:18100", "--upstream", "localhost:18100"}, "--upstream 127.0.0.1:18100: the tap's own --listen address (want the control plane's)"},
		"window short":   {[]string{"--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:18000", "--window", "10ms"}, "--window 10ms: outside 1s-24h"},
		"recv zero":      {[]string{"--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:18000", "--max-recv-msg-bytes", "0"}, "--max-recv-msg-bytes 0: outside 1-1073741824"},
		"log empty":      {[]string{"--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:18000", "--log", ""}, `--log "": empty (want a file path)`},
		"nothing there":  {[]string{"--listen", "127.0.0.1:0", "--upstream", down}, "--upstream " + down + ": nothing answers there (connect: connection refused) (want a running control plane's address)"},
		"argument":       {[]string{"--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:18000", "extra"}, "extra: unexpected argument (usage: lab tap [flags])"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			stdout, stderr, err := runLabArgs(t, append([]string{"tap"}, c.args...)...)
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
			assert.NotContains(t, err.Error(), "\n")
			assert.Empty(t, stdout)
			assert.Empty(t, stderr)
			ents, _ := os.ReadDir(".")
			assert.Empty(t, ents, "no xds.log")
		})
	}
}

// TestTapStopsAtEndOfInput: as lab serve, lab tap stops when its stdin ends (the pipe
// of a parent that died), after the steps it read; it does not run until killed.
func TestTapStopsAtEndOfInput(t *testing.T) {
	upstream, err := loopback.Listen(0) // checkUpstream only dials it
	require.NoError(t, err)
	defer upstream.Close()
	logPath := filepath.Join(t.TempDir(), "tap.log")
	var out, errOut syncbuf.Buffer
	root := newRootCmd()
	root.SetIn(strings.NewReader("first\n"))
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"tap", "--listen", "127.0.0.1:0", "--upstream", upstream.Addr().String(), "--log", logPath})
	done := make(chan error, 1)
	go func() { done <- root.Execute() }()
	select {
	case err := <-done:
		require.NoError(t, err, "stderr: %s", errOut.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("lab tap still runs 30 s after the end of its stdin; output:\n%s", out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.GreaterOrEqual(t, len(lines), 2, out.String())
	assert.Equal(t, []string{"step first", "stopping: end of input"}, lines[len(lines)-2:])
	assert.Empty(t, errOut.String())
}
