package main

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/serve"
	"github.com/xds-workbench/lab/shared/option"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
)

// TestServeRefusesBadFlags: through the command line, every bad address, port, limit
// and name is one line "--flag VALUE: what is wrong", before anything starts: nothing is
// printed, no xds.log is created (serve would otherwise open it first).
func TestServeRefusesBadFlags(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"no mode":             {nil, "--mode: not given (want sotw or delta)"},
		"bad mode":            {[]string{"--mode", "grpc"}, "--mode grpc: unknown protocol (want sotw or delta)"},
		"non-loopback":        {[]string{"--xds-addr", "0.0.0.0:18000"}, "--xds-addr 0.0.0.0:18000: not loopback (only 127.0.0.1 or localhost is allowed)"},
		"xds port high":       {[]string{"--xds-addr", "127.0.0.1:65536"}, "--xds-addr 127.0.0.1:65536: port 65536 is outside 1-65535"},
		"inventory port 0":    {[]string{"--inventory-port", "0"}, "--inventory-port 0: outside 1-65535"},
		"listener address":    {[]string{"--listener-port", "127.0.0.1:19000"}, "--listener-port 127.0.0.1:19000: an address, not a port (want only the port: the host is always 127.0.0.1)"},
		"log empty":           {[]string{"--log", ""}, `--log "": empty (want a file path)`},
		"versions unknown":    {[]string{"--sotw-versions", "sometimes"}, "--sotw-versions sometimes: unknown version strategy (want uniform or per-type)"},
		"policy unknown":      {[]string{"--nack-policy", "ignore"}, "--nack-policy ignore: unknown NACK policy (want resend, hold, backoff or revert)"},
		"delta with versions": {[]string{"--mode", "delta", "--sotw-versions", "per-type"}, "--sotw-versions per-type: SotW only (want --mode sotw, or no --sotw-versions)"},
		"cache unknown":       {[]string{"--cache", "lru"}, "--cache lru: unknown cache (want snapshot, snapshot-noads, linear or indexed)"},
		"linear uniform":      {[]string{"--cache", "linear", "--sotw-versions", "uniform"}, "--sotw-versions uniform: needs --cache snapshot: each LinearCache versions its own type (want per-type, or no --sotw-versions, with --cache linear)"},
		"linear resend":       {[]string{"--cache", "linear", "--nack-policy", "resend"}, "--nack-policy resend: needs --cache snapshot: a LinearCache tracks what it sent, not what was ACKed, so it never re-sends a rejected response (want hold or revert, or no --nack-policy, with --cache linear)"},
		"linear backoff":      {[]string{"--cache", "linear", "--nack-policy", "backoff"}, "--nack-policy backoff: needs --cache snapshot: a LinearCache never re-sends a rejected response, so there is no re-send to delay (want hold or revert, or no --nack-policy, with --cache linear)"},
		"indexed uniform":     {[]string{"--cache", "indexed", "--sotw-versions", "uniform"}, "--sotw-versions uniform: needs --cache snapshot: the indexed cache versions each type itself (want per-type, or no --sotw-versions, with --cache indexed)"},
		"indexed resend":      {[]string{"--cache", "indexed", "--nack-policy", "resend"}, "--nack-policy resend: needs --cache snapshot: the indexed cache, like a LinearCache, tracks what it sent, not what was ACKed, so it never re-sends a rejected response (want hold or revert, or no --nack-policy, with --cache indexed)"},
		"recv bytes zero":     {[]string{"--max-recv-msg-bytes", "0"}, "--max-recv-msg-bytes 0: outside 1-1073741824"},
		"send bytes word":     {[]string{"--max-send-msg-bytes", "lots"}, "--max-send-msg-bytes lots: not a whole number (want 1-1073741824)"},
		"http2 streams zero":  {[]string{"--max-concurrent-streams", "0"}, "--max-concurrent-streams 0: outside 1-1000000"},
		"http2 streams neg":   {[]string{"--max-concurrent-streams", "-1"}, "--max-concurrent-streams -1: outside 1-1000000"},
		"streams zero":        {[]string{"--max-streams", "0"}, "--max-streams 0: outside 1-1000000"},
		"keepalive zero":      {[]string{"--keepalive-min-time", "0s"}, "--keepalive-min-time 0s: outside 1ms-1h"},
		"keepalive negative":  {[]string{"--keepalive-min-time", "-1s"}, "--keepalive-min-time -1s: outside 1ms-1h"},
		"keepalive word":      {[]string{"--keepalive-min-time", "often"}, "--keepalive-min-time often: not a duration (want 1ms-1h, e.g. 45s or 2m)"},
		"positional argument": {[]string{"--mode", "sotw", "extra"}, "extra: unexpected argument (usage: lab serve [flags])"},
		"client unknown":      {[]string{"--client", "curl"}, "--client curl: unknown data plane (want envoy or grpc)"},
		"grpc with delta":     {[]string{"--mode", "delta", "--client", "grpc"}, errGRPCDelta.Error()},
		"grpc with envoy":     {[]string{"--client", "grpc", "--with-envoy"}, "--client grpc: --with-envoy runs Envoy; --client grpc runs grpc-go's client instead: give one"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Chdir(t.TempDir()) // the default --log is ./xds.log
			args := []string{"serve", "--xds-addr", "127.0.0.1:0"}
			if name != "no mode" {
				args = append(args, "--mode", "sotw")
			}
			stdout, stderr, err := runLabArgs(t, append(args, c.args...)...)
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
			assert.Empty(t, stdout, "nothing served")
			assert.Empty(t, stderr)
			ents, _ := os.ReadDir(".")
			assert.Empty(t, ents, "no xds.log")
		})
	}
}

// serveParsed runs lab serve's command on args with a run that only keeps the options.
func serveParsed(t *testing.T, args ...string) serve.Options {
	t.Helper()
	var got serve.Options
	cmd := newServeCmdWith(func(_ context.Context, o serve.Options, _ io.Reader, _, _ io.Writer) error {
		got = o
		return nil
	})
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	require.NoError(t, cmd.Execute())
	return got
}

// TestServeFreePortsFlag: --free-ports is a serve flag, and the flags given are the
// options serve keeps (Options.Given names options, not flags).
func TestServeFreePortsFlag(t *testing.T) {
	o := serveParsed(t, "--mode", "sotw", "--free-ports", "--listener-port", "19500")
	assert.True(t, o.FreePorts)
	assert.Equal(t, 19500, o.ListenerPort)
	require.NotNil(t, o.Given)
	assert.True(t, o.Given(serve.OptionListenerPort))
	assert.False(t, o.Given(serve.OptionInventoryPort))
	assert.False(t, o.Given(serve.OptionXDSAddr))
}

// TestServeFlagsReachOptions: each flag lands in its serve option.
func TestServeFlagsReachOptions(t *testing.T) {
	o := serveParsed(t, "--mode", "delta", "--xds-addr", "localhost:18001", "--node-id", "n", "--inventory-port", "18090",
		"--log", "d.log", "--max-log-size", "1MiB", "--cache", "linear", "--on-demand", "vhds", "--max-streams", "7",
		"--keepalive-min-time", "2s", "--quiet", "--with-envoy", "--with-inventory", "--metrics-addr", "127.0.0.1:0")
	assert.Equal(t, protocol.Delta, o.Mode)
	assert.Equal(t, "127.0.0.1:18001", o.XDSAddr)
	assert.Equal(t, "n", o.NodeID)
	assert.Equal(t, 18090, o.InventoryPort)
	assert.Equal(t, "d.log", o.LogPath)
	assert.Equal(t, int64(1<<20), o.MaxLogSize)
	assert.Equal(t, publish.LinearCache, o.Cache)
	assert.True(t, o.OnDemand.VirtualHosts)
	assert.Equal(t, 7, o.Limits.MaxStreams)
	assert.Equal(t, 2*time.Second, o.Limits.KeepaliveMinTime)
	assert.True(t, o.Quiet && o.WithEnvoy && o.WithInventory)
	assert.Equal(t, "127.0.0.1:0", o.MetricsAddr)
	assert.Equal(t, serve.ClientEnvoy, o.Client)
}

// TestServeCacheSnapshotNoADS: --cache snapshot-noads is the SnapshotCache without the
// ADS rule, and takes every SotW option the snapshot cache takes.
func TestServeCacheSnapshotNoADS(t *testing.T) {
	o := serveParsed(t, "--mode", "sotw", "--cache", "snapshot-noads", "--sotw-versions", "uniform", "--nack-policy", "backoff")
	assert.Equal(t, publish.SnapshotCacheNoADS, o.Cache)
	assert.Equal(t, "uniform", o.SotWVersions)
	assert.Equal(t, "backoff", o.NackPolicy)
	assert.Contains(t, newServeCmd().Flags().Lookup("cache").Usage, "snapshot-noads (the same without that ADS rule")
}

// TestServeRefusalNamesTheFlag: a refusal of experiments/serve reads as the flag's, with
// its value; other errors pass unchanged.
func TestServeRefusalNamesTheFlag(t *testing.T) {
	o := serve.DefaultOptions()
	for _, c := range []struct {
		err  error
		want string
	}{
		{&option.Error{Option: serve.OptionWithEnvoy, Err: os.ErrNotExist}, "--with-envoy: file does not exist"},
		{&option.Error{Option: serve.OptionXDSAddr, Value: "127.0.0.1:18000", Err: os.ErrExist}, "--xds-addr 127.0.0.1:18000: file already exists"},
		{&option.Error{Option: serve.OptionInventoryPort, Value: "65535", Err: serve.ErrNoRoomForV2}, "--inventory-port 65535: --with-inventory serves v2 on the next port (want at most 65534)"},
		{&option.Error{Option: "no such option", Value: "x", Err: os.ErrExist}, "no such option x: file already exists"},
		{os.ErrClosed, os.ErrClosed.Error()},
	} {
		assert.EqualError(t, serveRefusal(c.err, o), c.want)
	}
	assert.NoError(t, serveRefusal(nil, o))
}

// TestServeHelpListsTheCommands: lab serve --help lists the commands for both clients.
func TestServeHelpListsTheCommands(t *testing.T) {
	assert.Contains(t, newServeCmd().Long, serve.Help(""))
}

func TestServeCommandFlags(t *testing.T) {
	_, _, err := runLabArgs(t, "serve")
	require.Error(t, err)
	assert.EqualError(t, err, "--mode: not given (want sotw or delta)")
	_, _, err = runLabArgs(t, "serve", "--mode", "sotw", "extra")
	require.Error(t, err)

	cmd := newServeCmd()
	assert.NotEmpty(t, cmd.Example)
	defaults := map[string]string{
		"xds-addr": "127.0.0.1:18000", "node-id": "teaching-envoy", "inventory-port": "18080",
		"listener-port": "19000", "log": "xds.log", "max-recv-msg-bytes": "4194304",
		"max-send-msg-bytes": "67108864", "max-concurrent-streams": "16", "max-streams": "2048",
		"keepalive-min-time": "10s", "sotw-versions": "", "nack-policy": "", "cache": "snapshot",
	}
	for name, want := range defaults {
		f := cmd.Flags().Lookup(name)
		require.NotNil(t, f, "flag --%s", name)
		assert.Equal(t, want, f.DefValue, "flag --%s", name)
	}
}
