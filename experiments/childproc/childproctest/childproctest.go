// Package childproctest proves in tests that a child of the workbench dies with it: a
// test re-executes its own binary as a helper parent, which starts the child and reports
// its pid; the test SIGKILLs the helper (a crash: no Stop, no cleanup) and waits, with a
// deadline, until the child is gone. The helper is a test of its own that does nothing
// unless this package's environment variable names it.
package childproctest

import (
	"bytes"
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
)

// pidFileEnv names, in a helper parent's environment, the file it reports its child's
// pid in.
const pidFileEnv = "LAB_CHILDPROC_HELPER_PIDFILE"

// deadline bounds each wait: the helper starting its child, and the child's death.
const deadline = 30 * time.Second

// IsHelper reports whether this test binary runs as a helper parent (CrashParent): a
// helper test returns at once when it does not.
func IsHelper() bool { return os.Getenv(pidFileEnv) != "" }

// ReportChild, in a helper parent, reports the child's pid and blocks until the helper
// is killed. Should the child exit first, it fails the helper, and says how (why) in a
// file CrashParent reads: the helper may be killed before it prints anything.
func ReportChild(t *testing.T, pid int, exited <-chan struct{}, why func() string) {
	pidFile := os.Getenv(pidFileEnv)
	tmp := pidFile + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(strconv.Itoa(pid)), 0o644))
	require.NoError(t, os.Rename(tmp, pidFile))
	<-exited
	_ = os.WriteFile(pidFile+".exit", []byte(why()), 0o644)
	t.Fatalf("the child exited before its parent was killed: %s", why())
}

// CrashParent runs this test binary's test named helper as a parent (with env added),
// waits for the pid of the child it starts, SIGKILLs it and requires the child gone.
// When this process can adopt orphans (a child subreaper), it reaps the child and
// requires that SIGKILL ended it: Pdeathsig, not an accident.
func CrashParent(t *testing.T, helper string, env ...string) {
	t.Helper()
	const prSetChildSubreaper = 36
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	subreaper := errno == 0
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$", "-test.count=1")
	// The helper cannot clean up after being killed; its temp files go in our TempDir.
	cmd.Env = append(append(os.Environ(), env...), pidFileEnv+"="+pidFile, "TMPDIR="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	helperDone := make(chan error, 1)
	go func() { helperDone <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	var pid int
	Poll(t, deadline, "the helper parent's child pid", func() bool {
		select {
		case err := <-helperDone:
			t.Fatalf("helper parent exited before starting its child: %v; output:\n%s", err, out.String())
		default:
		}
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(string(b))
		require.NoError(t, err)
		return true
	})
	require.False(t, Gone(pid), "the child should be running under the helper")
	t.Logf("helper parent pid %d started child pid %d; killing the parent", cmd.Process.Pid, pid)

	require.NoError(t, cmd.Process.Kill()) // a crash: no Stop, no cleanup
	<-helperDone
	if !subreaper {
		RequireGone(t, pid, deadline)
		return
	}
	var ws syscall.WaitStatus
	Poll(t, deadline, fmt.Sprintf("pid %d to die with its killed parent", pid), func() bool {
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if err != nil {
			early, _ := os.ReadFile(pidFile + ".exit")
			require.NoError(t, err, "the child should have been adopted by this process (gone: %v; exited before the kill: %q); helper output:\n%s",
				Gone(pid), early, out.String())
		}
		return got == pid
	})
	require.True(t, ws.Signaled(), "child exit status %v", ws)
	require.Equal(t, syscall.SIGKILL, ws.Signal(), "Pdeathsig kills the child")
}

// RequireGone waits up to timeout for pid to be gone.
func RequireGone(t *testing.T, pid int, timeout time.Duration) {
	t.Helper()
	Poll(t, timeout, fmt.Sprintf("pid %d to be gone", pid), func() bool { return Gone(pid) })
}

// Poll checks done every 20 ms until it holds, and fails the test after timeout.
func Poll(t *testing.T, timeout time.Duration, what string, done func() bool) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	limit := time.After(timeout)
	for !done() {
		select {
		case <-limit:
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		case <-tick.C:
		}
	}
}

// Gone reports whether pid has exited: absent, or a zombie waiting for whichever
// ancestor adopted it to reap it (in containers that may never happen).
func Gone(pid int) bool {
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
