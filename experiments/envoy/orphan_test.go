package envoy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/loopback"
)

const helperEnv = "LAB_ENVOY_PARENT_HELPER_PIDFILE"

// TestHelperEnvoyParent is not a test on its own: TestCrashedParentLeavesNoEnvoy runs the
// test binary as a child that starts Envoy, reports its pid, and waits to be killed.
func TestHelperEnvoyParent(t *testing.T) {
	pidFile := os.Getenv(helperEnv)
	if pidFile == "" {
		return // only meaningful as the child of TestCrashedParentLeavesNoEnvoy
	}
	bin, err := Find("")
	require.NoError(t, err)
	unused, err := loopback.FreePort()
	require.NoError(t, err)
	t.Cleanup(func() { loopback.Release(unused) })
	p, err := Start(context.Background(), Options{
		Binary:     bin,
		ConfigPath: writeFile(t, "envoy.yaml", fmt.Sprintf(adsBootstrap, unused)),
	})
	require.NoError(t, err)
	tmp := pidFile + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(strconv.Itoa(p.Pid())), 0o644))
	require.NoError(t, os.Rename(tmp, pidFile))
	<-p.Exited() // blocks until the parent test SIGKILLs this process
	// Reaching here means Envoy exited on its own while this parent lived: say how, in a
	// file the parent test reads (this process may be killed before it prints anything).
	_ = os.WriteFile(pidFile+".exit", []byte(fmt.Sprintf("%v; %s", p.ExitErr(), p.diagnostics())), 0o644)
	t.Fatalf("Envoy exited before its parent was killed: %v", p.ExitErr())
}

func TestCrashedParentLeavesNoEnvoy(t *testing.T) {
	requireEnvoy(t)
	// As a child subreaper this test process adopts the orphaned Envoy, so it can reap it
	// and see which signal ended it (otherwise it would go to PID 1).
	const prSetChildSubreaper = 36
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	subreaper := errno == 0
	pidFile := filepath.Join(t.TempDir(), "envoy.pid")
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperEnvoyParent$", "-test.count=1")
	// The helper cannot clean up after being killed; its temp files go in our TempDir.
	helper.Env = append(os.Environ(), helperEnv+"="+pidFile, "TMPDIR="+t.TempDir())
	var helperOut bytes.Buffer
	helper.Stdout, helper.Stderr = &helperOut, &helperOut
	require.NoError(t, helper.Start())
	helperDone := make(chan error, 1)
	go func() { helperDone <- helper.Wait() }()
	t.Cleanup(func() { _ = helper.Process.Kill() })

	deadline := time.Now().Add(30 * time.Second)
	var envoyPid int
	for envoyPid == 0 {
		if b, err := os.ReadFile(pidFile); err == nil {
			envoyPid, err = strconv.Atoi(string(b))
			require.NoError(t, err)
			break
		}
		select {
		case err := <-helperDone:
			t.Fatalf("helper exited before starting Envoy: %v", err)
		default:
		}
		require.True(t, time.Now().Before(deadline), "helper never reported an Envoy pid")
		time.Sleep(20 * time.Millisecond)
	}
	require.False(t, gone(envoyPid), "Envoy should be running under the helper")

	require.NoError(t, helper.Process.Kill()) // a crash: no Stop, no cleanup
	<-helperDone
	if subreaper {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(envoyPid, &ws, syscall.WNOHANG, nil)
			if err != nil {
				early, _ := os.ReadFile(pidFile + ".exit")
				require.NoError(t, err, "Envoy should have been adopted by this process (gone: %v; exited before the kill: %q); helper output:\n%s",
					gone(envoyPid), early, helperOut.String())
			}
			if pid == envoyPid {
				require.True(t, ws.Signaled(), "Envoy exit status %v", ws)
				require.Equal(t, syscall.SIGKILL, ws.Signal(), "Pdeathsig kills Envoy")
				return
			}
			require.True(t, time.Now().Before(deadline), "Envoy pid %d outlived its killed parent", envoyPid)
			time.Sleep(20 * time.Millisecond)
		}
	}
	for !gone(envoyPid) {
		require.True(t, time.Now().Before(deadline), "Envoy pid %d outlived its killed parent", envoyPid)
		time.Sleep(20 * time.Millisecond)
	}
}

// gone reports whether pid has exited: absent, or a zombie waiting for whichever
// ancestor adopted it to reap it (in containers that may never happen).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}
