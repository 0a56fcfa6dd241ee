package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/experiments/runner"
	"github.com/xds-workbench/lab/experiments/testenv"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/loopback/loopbacktest"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/syncbuf"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// runArgs are `lab run` flags on free ports, writing to out.
func runArgs(t *testing.T, client, out string) []string {
	p := loopbacktest.FreePorts(t, 4)
	return []string{"run", "--mode=sotw", "--client=" + client, "--out", out,
		"--xds-addr", loopback.Addr(p[0]), "--listener-port", strconv.Itoa(p[1]), "--admin-port", "0",
		"--inventory-ports", fmt.Sprintf("%d,%d", p[2], p[3])}
}

// withFlag replaces (or appends) one flag's value in args.
func withFlag(args []string, flag, value string) []string {
	out := append([]string(nil), args...)
	for i := range out {
		if out[i] == flag && i+1 < len(out) {
			out[i+1] = value
			return out
		}
	}
	return append(out, flag, value)
}

// TestRunRefusesBadFlags: every bad address, port, duration, count and name is refused
// before anything starts, in one line "--flag VALUE: what is wrong", and no run
// directory is created.
func TestRunRefusesBadFlags(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"mode unknown":        {[]string{"--mode", "grpc"}, "--mode grpc: unknown protocol (want sotw or delta)"},
		"mode empty":          {[]string{"--mode", ""}, `--mode "": unknown protocol (want sotw or delta)`},
		"client unknown":      {[]string{"--client", "nginx"}, "--client nginx: unknown data plane (want envoy, grpc, sim or auto)"},
		"xds any":             {[]string{"--xds-addr", "0.0.0.0:18000"}, "--xds-addr 0.0.0.0:18000: not loopback (only 127.0.0.1 or localhost is allowed)"},
		"xds lan":             {[]string{"--xds-addr", "192.168.1.1:18000"}, "--xds-addr 192.168.1.1:18000: not loopback (only 127.0.0.1 or localhost is allowed)"},
		"xds ipv6":            {[]string{"--xds-addr", "[::1]:18000"}, "--xds-addr [::1]:18000: not loopback (only 127.0.0.1 or localhost is allowed)"},
		"xds no port":         {[]string{"--xds-addr", "127.0.0.1"}, "--xds-addr 127.0.0.1: missing port in address (want 127.0.0.1:PORT)"},
		"xds port 0":          {[]string{"--xds-addr", "127.0.0.1:0"}, "--xds-addr 127.0.0.1:0: port 0 is outside 1-65535"},
		"xds port high":       {[]string{"--xds-addr", "127.0.0.1:65536"}, "--xds-addr 127.0.0.1:65536: port 65536 is outside 1-65535"},
		"listener address":    {[]string{"--listener-port", "0.0.0.0:19000"}, "--listener-port 0.0.0.0:19000: an address, not a port (want only the port: the host is always 127.0.0.1)"},
		"listener 0":          {[]string{"--listener-port", "0"}, "--listener-port 0: outside 1-65535"},
		"listener high":       {[]string{"--listener-port", "65536"}, "--listener-port 65536: outside 1-65535"},
		"listener negative":   {[]string{"--listener-port", "-1"}, "--listener-port -1: outside 1-65535"},
		"listener word":       {[]string{"--listener-port", "http"}, "--listener-port http: not a number (want a port, 1-65535)"},
		"admin address":       {[]string{"--admin-port", "127.0.0.1:9901"}, "--admin-port 127.0.0.1:9901: an address, not a port (want only the port: the host is always 127.0.0.1)"},
		"admin high":          {[]string{"--admin-port", "70000"}, "--admin-port 70000: outside 0-65535"},
		"admin negative":      {[]string{"--admin-port", "-5"}, "--admin-port -5: outside 0-65535"},
		"inventory high":      {[]string{"--inventory-ports", "18080,65536"}, "--inventory-ports 18080,65536: v2: outside 1-65535"},
		"inventory zero":      {[]string{"--inventory-ports", "0,18081"}, "--inventory-ports 0,18081: v1: outside 1-65535"},
		"inventory one":       {[]string{"--inventory-ports", "18080"}, "--inventory-ports 18080: not two ports (want V1,V2, each 1-65535)"},
		"inventory three":     {[]string{"--inventory-ports", "1,2,3"}, "--inventory-ports 1,2,3: not two ports (want V1,V2, each 1-65535)"},
		"inventory address":   {[]string{"--inventory-ports", "0.0.0.0:18080,18081"}, "--inventory-ports 0.0.0.0:18080,18081: v1: an address, not a port (want only the port: the host is always 127.0.0.1)"},
		"step-timeout neg":    {[]string{"--step-timeout", "-1s"}, "--step-timeout -1s: outside 1s-1h"},
		"step-timeout zero":   {[]string{"--step-timeout", "0"}, "--step-timeout 0: outside 1s-1h"},
		"step-timeout long":   {[]string{"--step-timeout", "2h"}, "--step-timeout 2h: outside 1s-1h"},
		"step-timeout word":   {[]string{"--step-timeout", "soon"}, "--step-timeout soon: not a duration (want 1s-1h, e.g. 45s or 2m)"},
		"outage negative":     {[]string{"--outage", "-5s"}, "--outage -5s: outside 0-10m"},
		"outage long":         {[]string{"--outage", "11m"}, "--outage 11m: outside 0-10m"},
		"sotw-versions bad":   {[]string{"--sotw-versions", "lazy"}, "--sotw-versions lazy: unknown version strategy (want uniform or per-type)"},
		"nack-policy bad":     {[]string{"--nack-policy", "ignore"}, "--nack-policy ignore: unknown NACK policy (want resend, hold, backoff or revert)"},
		"cache bad":           {[]string{"--cache", "lru"}, "--cache lru: unknown cache (want snapshot, snapshot-noads, linear or indexed)"},
		"linear uniform":      {[]string{"--cache", "linear", "--sotw-versions", "uniform"}, "--sotw-versions uniform: needs --cache snapshot: each LinearCache versions its own type (want per-type, or no --sotw-versions, with --cache linear)"},
		"linear resend":       {[]string{"--cache", "linear", "--nack-policy", "resend"}, "--nack-policy resend: needs --cache snapshot: a LinearCache tracks what it sent, not what was ACKed, so it never re-sends a rejected response (want hold or revert, or no --nack-policy, with --cache linear)"},
		"linear backoff":      {[]string{"--cache", "linear", "--nack-policy", "backoff"}, "--nack-policy backoff: needs --cache snapshot: a LinearCache never re-sends a rejected response, so there is no re-send to delay (want hold or revert, or no --nack-policy, with --cache linear)"},
		"steps unknown":       {[]string{"--steps", "initial,warp"}, `--steps initial,warp: unknown step "warp" (known: initial, port-change, invalid-route, recover, envoy-restart, control-plane-restart, remove-cluster, restore)`},
		"steps no publish":    {[]string{"--steps", "envoy-restart"}, `--steps envoy-restart: the first selected step must publish a state (start with "initial")`},
		"bool not bool":       {[]string{"--publish-during-reconnect=maybe"}, "--publish-during-reconnect maybe: not true or false"},
		"unknown flag":        {[]string{"--frobnicate"}, "--frobnicate: unknown flag (see lab run --help)"},
		"positional argument": {[]string{"extra"}, "extra: unexpected argument (usage: lab run --mode=sotw|delta [flags])"},
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			args := runArgs(t, "sim", out)
			if len(c.args) == 2 {
				args = withFlag(args, c.args[0], c.args[1])
			} else {
				args = append(args, c.args...)
			}
			stdout, stderr, err := runLabArgs(t, args...)
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
			assert.NoDirExists(t, out, "nothing is created for a bad flag")
			assert.Empty(t, stdout, "nothing started")
			assert.Empty(t, stderr)
		})
	}
	t.Run("mode missing", func(t *testing.T) {
		_, _, err := runLabArgs(t, "run", "--client=sim")
		assert.EqualError(t, err, "--mode: not given (want sotw or delta)")
	})
	t.Run("SotW options with delta", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "run")
		for flag, v := range map[string]string{"--sotw-versions": "per-type", "--nack-policy": "hold"} {
			_, _, err := runLabArgs(t, withFlag(withFlag(runArgs(t, "sim", out), "--mode", "delta"), flag, v)...)
			assert.EqualError(t, err, fmt.Sprintf("%s %s: SotW only (want --mode sotw, or no %s)", flag, v, flag))
		}
		assert.NoDirExists(t, out)
	})
	t.Run("grpc with delta", func(t *testing.T) {
		// grpc-go has no delta client: one line naming its source, before anything starts.
		out := filepath.Join(t.TempDir(), "run")
		stdout, _, err := runLabArgs(t, withFlag(withFlag(runArgs(t, "grpc", out), "--mode", "delta"), "--scenario", "all")...)
		assert.EqualError(t, err, errGRPCDelta.Error())
		assert.ErrorIs(t, err, grpcclient.ErrNoDelta)
		assert.Empty(t, stdout)
		assert.NoDirExists(t, out)
	})
	t.Run("runner refusals name the flag", func(t *testing.T) {
		// The runner refuses options in words (option.Error); the CLI names the flag.
		out := filepath.Join(t.TempDir(), "run")
		_, _, err := runLabArgs(t, withFlag(runArgs(t, "grpc", out), "--config-yaml", "{a: 1}")...)
		assert.EqualError(t, err, "--config-yaml: is merged over Envoy's bootstrap; the grpc client has none")
		_, _, err = runLabArgs(t, append(withFlag(runArgs(t, "sim", out), "--scenario", "warming-order"), "--publish-during-reconnect")...)
		assert.EqualError(t, err, `--publish-during-reconnect: applies to the teaching scenario; in scenario "warming-order" give the restart-control-plane step a publish list with hold_envoy: true`)
		assert.NoDirExists(t, out)
	})
	t.Run("out holds a run", func(t *testing.T) {
		out := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(out, "xds.log"), []byte("{}\n"), 0o644))
		_, _, err := runLabArgs(t, runArgs(t, "sim", out)...)
		assert.EqualError(t, err, "--out "+out+": already holds a run (xds.log) (want a new directory or one without a run)")
		ents, _ := os.ReadDir(out)
		assert.Len(t, ents, 1, "nothing written beside the earlier run")
	})
	t.Run("out is a file", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "file")
		require.NoError(t, os.WriteFile(out, nil, 0o644))
		_, _, err := runLabArgs(t, runArgs(t, "sim", out)...)
		assert.EqualError(t, err, "--out "+out+": not a directory (want a new directory or one without a run)")
	})
}

// TestRunCacheOptions: --cache reaches the runner; with linear, the SotW options left
// unset are what the LinearCache does (per-type, hold), and the ones it can honour are
// accepted.
func TestRunCacheOptions(t *testing.T) {
	for name, c := range map[string]struct {
		args             []string
		cache            publish.Cache
		versions, policy string
	}{
		"default":          {nil, publish.SnapshotCache, "uniform", "resend"},
		"snapshot":         {[]string{"--cache", "snapshot"}, publish.SnapshotCache, "uniform", "resend"},
		"linear":           {[]string{"--cache", "linear"}, publish.LinearCache, "per-type", "hold"},
		"linear per-type":  {[]string{"--cache", "linear", "--sotw-versions", "per-type", "--nack-policy", "hold"}, publish.LinearCache, "per-type", "hold"},
		"linear revert":    {[]string{"--cache", "linear", "--nack-policy", "revert"}, publish.LinearCache, "per-type", "revert"},
		"snapshot backoff": {[]string{"--nack-policy", "backoff"}, publish.SnapshotCache, "uniform", "backoff"},
		"snapshot-noads":   {[]string{"--cache", "snapshot-noads"}, publish.SnapshotCacheNoADS, "uniform", "resend"},
		"noads per-type":   {[]string{"--cache", "snapshot-noads", "--sotw-versions", "per-type", "--nack-policy", "backoff"}, publish.SnapshotCacheNoADS, "per-type", "backoff"},
	} {
		t.Run(name, func(t *testing.T) {
			var got runner.Options
			cmd := newRunCmdWith(func(_ context.Context, o runner.Options, _ io.Writer) error { got = o; return nil })
			cmd.SetArgs(append([]string{"--mode", "sotw", "--client", "sim", "--out", filepath.Join(t.TempDir(), "run")}, c.args...))
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			require.NoError(t, cmd.Execute())
			assert.Equal(t, c.cache, got.Cache)
			assert.Equal(t, c.versions, string(got.Versions))
			assert.Equal(t, c.policy, string(got.NackPolicy))
		})
	}
	t.Run("delta", func(t *testing.T) {
		var got runner.Options
		cmd := newRunCmdWith(func(_ context.Context, o runner.Options, _ io.Writer) error { got = o; return nil })
		cmd.SetArgs([]string{"--mode", "delta", "--client", "sim", "--cache", "linear", "--out", filepath.Join(t.TempDir(), "run")})
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		require.NoError(t, cmd.Execute())
		assert.Equal(t, publish.LinearCache, got.Cache)
		assert.Empty(t, got.Versions)
		assert.Empty(t, got.NackPolicy)
	})
}

// TestRunAcceptsLocalhost: localhost means 127.0.0.1, without asking a resolver.
func TestRunAcceptsLocalhost(t *testing.T) {
	o := defaultRunOptions()
	o.run.Mode = "sotw"
	require.NoError(t, addrValue{p: &o.xdsAddr}.Set("localhost:18001"))
	assert.Equal(t, "127.0.0.1:18001", o.xdsAddr)
	ro, err := o.runnerOptions(nil)
	require.NoError(t, err)
	assert.Equal(t, 18001, ro.XDSPort)
}

// TestRunFreePorts: --free-ports zeroes (the runner's "pick a free one") every port
// whose flag was not given, and keeps the ones given; without it the documented
// defaults stay.
func TestRunFreePorts(t *testing.T) {
	parse := func(t *testing.T, args ...string) runner.Options {
		t.Helper()
		var got runner.Options
		cmd := newRunCmdWith(func(_ context.Context, o runner.Options, _ io.Writer) error {
			got = o
			return nil
		})
		cmd.SetArgs(append([]string{"--mode", "delta"}, args...))
		cmd.SetOut(io.Discard)
		require.NoError(t, cmd.Execute())
		return got
	}
	def := parse(t)
	assert.Equal(t, [5]int{18000, 19000, 9901, 18080, 18081}, [5]int{def.XDSPort, def.ListenerPort, def.AdminPort, def.InventoryPorts[0], def.InventoryPorts[1]}, "the defaults")
	free := parse(t, "--free-ports")
	assert.Equal(t, [5]int{}, [5]int{free.XDSPort, free.ListenerPort, free.AdminPort, free.InventoryPorts[0], free.InventoryPorts[1]}, "every port free")
	mixed := parse(t, "--free-ports", "--listener-port", "19500", "--inventory-ports", "18500,18501")
	assert.Equal(t, [5]int{0, 19500, 0, 18500, 18501}, [5]int{mixed.XDSPort, mixed.ListenerPort, mixed.AdminPort, mixed.InventoryPorts[0], mixed.InventoryPorts[1]}, "ports given are kept")
}

// TestRunPortInUse: a port already taken gives a one-line error naming the port, before
// the run directory is created; so does a port given twice.
func TestRunPortInUse(t *testing.T) {
	hold := func(t *testing.T) int {
		l, err := loopback.Listen(0)
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
		return l.Addr().(*net.TCPAddr).Port
	}
	cases := map[string]struct {
		client string
		flag   string
		value  func(p int) string
		what   string
	}{
		"xds":          {"sim", "--xds-addr", func(p int) string { return loopback.Addr(p) }, "xDS server port"},
		"inventory v2": {"sim", "--inventory-ports", func(p int) string { return fmt.Sprintf("%d,%d", loopbacktest.FreePorts(t, 1)[0], p) }, "inventory v2 port"},
		"listener":     {"envoy", "--listener-port", strconv.Itoa, "Envoy listener port"},
		"admin":        {"envoy", "--admin-port", strconv.Itoa, "Envoy admin port"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if c.client == "envoy" {
				envoytest.Require(t)
			}
			port := hold(t)
			out := filepath.Join(t.TempDir(), "run")
			_, _, err := runLabArgs(t, withFlag(runArgs(t, c.client, out), c.flag, c.value(port))...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), fmt.Sprintf("%s %d is not free", c.what, port))
			assert.Contains(t, err.Error(), "address already in use by "+selfHolder(t), "the holder is named")
			assert.NotContains(t, err.Error(), "\n")
			assert.NoDirExists(t, out)
		})
	}
	t.Run("twice", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "run")
		p := loopbacktest.FreePorts(t, 1)[0]
		args := withFlag(withFlag(runArgs(t, "sim", out), "--xds-addr", loopback.Addr(p)), "--inventory-ports", fmt.Sprintf("%d,%d", p, loopbacktest.FreePorts(t, 1)[0]))
		_, _, err := runLabArgs(t, args...)
		require.Error(t, err)
		assert.Contains(t, err.Error(), fmt.Sprintf("port %d is given twice", p))
		assert.NoDirExists(t, out)
	})
}

// selfHolder is how a port this test process holds is named: "pid N (comm)".
func selfHolder(t *testing.T) string {
	t.Helper()
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Skip("no /proc: the holder cannot be named")
	}
	return fmt.Sprintf("pid %d (%s)", os.Getpid(), strings.TrimSpace(string(comm)))
}

// buildLab builds the lab binary into dir.
func buildLab(t *testing.T, dir string) string {
	t.Helper()
	testenv.SkipIfShort(t, testenv.NeedsLabBinary)
	goBin, err := exec.LookPath("go")
	if err != nil {
		// The go command that runs this test may not be on PATH; it is then the one
		// this binary was built with. runtime.GOROOT is deprecated because a copied
		// binary's build root may not exist, which cannot happen to a test binary that
		// `go test` has just built.
		//lint:ignore SA1019 see above
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(dir, "lab")
	out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// startLab runs the binary with args and returns the process; its output goes to out.
func startLab(t *testing.T, bin string, args []string) (*exec.Cmd, *syncbuf.Buffer) {
	t.Helper()
	out := &syncbuf.Buffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, out
}

// waitFile polls until path exists or the deadline passes.
func waitFile(t *testing.T, path string, within time.Duration, out *syncbuf.Buffer) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := os.Stat(path)
		return err == nil
	}, within, 5*time.Millisecond, "%s never appeared; output:\n%s", path, out)
}

// waitExit waits for cmd with a deadline, killing it if it does not exit.
func waitExit(t *testing.T, cmd *exec.Cmd, within time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(within):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("lab did not exit within %s", within)
		return nil
	}
}

// children returns the pids whose parent is pid.
func children(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PPid:"); ok && strings.TrimSpace(v) == strconv.Itoa(pid) {
				out = append(out, child)
			}
		}
	}
	return out
}

// adminAddressDir is the directory of Envoy's --admin-address-path in pid's command line.
func adminAddressDir(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	args := strings.Split(string(b), "\x00")
	for i, a := range args {
		if a == "--admin-address-path" && i+1 < len(args) && strings.Contains(args[i+1], "lab-envoy-") {
			return filepath.Dir(args[i+1])
		}
	}
	return ""
}

// processesMentioning returns the live (non-zombie) processes whose command line
// contains s (the run directory: Envoy's bootstrap and logs live there).
func processesMentioning(s string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(s)) {
			continue
		}
		out = append(out, e.Name()+": "+string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return out
}

// assertNoProcessesLeft polls until no process mentions dir and none of pids lives.
func assertNoProcessesLeft(t *testing.T, dir string, pids []int) {
	t.Helper()
	assert.Eventually(t, func() bool {
		for _, p := range pids {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", p)); err == nil {
				return false
			}
		}
		return len(processesMentioning(dir)) == 0
	}, 15*time.Second, 20*time.Millisecond, "child processes left: %v", processesMentioning(dir))
}

// assertEvidenceWhole parses what a stopped run left: every *.json file, and every line
// of the JSON-lines logs except possibly an unfinished last one. It returns the number
// of leftover temporary files.
func assertEvidenceWhole(t *testing.T, dir string) (tmps int) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		name := e.Name()
		path := filepath.Join(dir, name)
		switch {
		case strings.Contains(name, ".tmp-"):
			tmps++
		case strings.HasSuffix(name, ".json"):
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.True(t, json.Valid(b), "%s is whole JSON", name)
		case name == "xds.log" || strings.HasPrefix(name, "inventory-"):
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			lines := bytes.Split(b, []byte("\n"))
			for i, l := range lines {
				last := i == len(lines)-1
				if len(l) == 0 || last { // the last piece has no newline: it may be cut
					continue
				}
				assert.True(t, json.Valid(l), "%s line %d parses: %.120s", name, i+1, l)
			}
		}
	}
	return tmps
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// TestRunSignals builds the lab binary and stops `lab run` against real Envoy from the
// outside. SIGINT at a step leaves envoy.result "FAIL: interrupted at <step>", run.exit
// 130, whole evidence files and no child process. SIGKILL between steps leaves whole
// JSON files, an xds.log whose every line but possibly the last parses, at most one
// temporary file, and no Envoy (it dies with its parent).
func TestRunSignals(t *testing.T) {
	envoytest.Require(t)
	bin := buildLab(t, t.TempDir())

	for _, after := range []string{"initial", "reconnected"} {
		t.Run("SIGINT after "+after, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			cmd, out := startLab(t, bin, runArgs(t, "envoy", dir))
			waitFile(t, filepath.Join(dir, after+".json"), 60*time.Second, out)
			kids := children(cmd.Process.Pid)
			require.NotEmpty(t, kids, "Envoy runs as a child of lab")
			require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
			err := waitExit(t, cmd, 30*time.Second)
			require.Error(t, err, "an interrupted run does not exit 0; output:\n%s", out)
			var exitErr *exec.ExitError
			require.ErrorAs(t, err, &exitErr)
			assert.Equal(t, 130, exitErr.ExitCode(), "the process exits 130, like run.exit")
			t.Logf("output:\n%s", out)

			var sum runner.Summary
			b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &sum))
			require.NotEmpty(t, sum.Steps)
			lastStep := sum.Steps[len(sum.Steps)-1]
			assert.Equal(t, "interrupted", lastStep.Failure, "the step in progress is marked interrupted: %+v", sum.Steps)
			want := "FAIL: interrupted at " + lastStep.Name
			assert.Equal(t, want, readTrim(t, filepath.Join(dir, "envoy.result")))
			assert.Equal(t, want, sum.Result)
			assert.Equal(t, "130", readTrim(t, filepath.Join(dir, "run.exit")))
			names := make([]string, len(sum.Steps))
			for i, s := range sum.Steps {
				names[i] = s.Name
			}
			assert.NotContains(t, names[:len(names)-1], lastStep.Name)
			assert.FileExists(t, filepath.Join(dir, after+".json"), "files written before the signal stay")
			assert.Zero(t, assertEvidenceWhole(t, dir), "no temporary file left after a clean stop")
			ev, st, err := xdslog.ReadFile(dir)
			require.NoError(t, err)
			assert.Zero(t, st.Skipped, st.FirstSkip)
			assert.NotEmpty(t, ev)
			assertNoProcessesLeft(t, dir, kids)
		})
	}

	t.Run("SIGKILL between steps", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "run")
		cmd, out := startLab(t, bin, runArgs(t, "envoy", dir))
		waitFile(t, filepath.Join(dir, "updated.json"), 60*time.Second, out)
		kids := children(cmd.Process.Pid)
		require.NotEmpty(t, kids)
		for _, k := range kids {
			// lab cannot remove Envoy's temporary admin-address directory once killed.
			if dir := adminAddressDir(k); dir != "" {
				t.Cleanup(func() { os.RemoveAll(dir) })
			}
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = waitExit(t, cmd, 30*time.Second)
		assert.LessOrEqual(t, assertEvidenceWhole(t, dir), 1, "at most the one file being written")
		assert.FileExists(t, filepath.Join(dir, "initial.json"))
		assert.FileExists(t, filepath.Join(dir, "run.json"))
		f, err := os.Open(filepath.Join(dir, "xds.log"))
		require.NoError(t, err)
		defer f.Close()
		n := 0
		for sc := bufio.NewScanner(f); sc.Scan(); n++ {
		}
		assert.Positive(t, n)
		assertNoProcessesLeft(t, dir, kids)
	})
}

// TestBootstrapLoopbackOnly: `lab bootstrap` refuses non-loopback or out-of-range
// addresses in one line and prints nothing; what it prints points Envoy at 127.0.0.1 only
// (admin listener and control plane).
func TestBootstrapLoopbackOnly(t *testing.T) {
	for name, args := range map[string][]string{
		"xds any":       {"--xds-addr", "0.0.0.0:18000"},
		"xds ipv6 any":  {"--xds-addr", "[::]:18000"},
		"xds host name": {"--xds-addr", "example.com:18000"},
		"xds lan":       {"--xds-addr", "10.0.0.1:18000"},
		"xds port":      {"--xds-addr", "127.0.0.1:70000"},
		"admin address": {"--admin-port", "0.0.0.0:9901"},
		"admin high":    {"--admin-port", "65536"},
		"admin neg":     {"--admin-port", "-1"},
	} {
		t.Run(name, func(t *testing.T) {
			out, _, err := runLabArgs(t, append([]string{"bootstrap", "--mode", "delta"}, args...)...)
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "\n")
			assert.Empty(t, out)
		})
	}
	for _, mode := range []string{"sotw", "delta"} {
		out, _, err := runLabArgs(t, "bootstrap", "--mode", mode, "--admin-port", "0")
		require.NoError(t, err)
		var addrs int
		for _, line := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "address: "); ok {
				addrs++
				assert.Equal(t, "127.0.0.1", strings.Trim(v, `"`), "%s bootstrap: %s", mode, line)
			}
		}
		assert.Equal(t, 2, addrs, "admin and xds_cluster addresses")
	}
}
