package childproc

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/childproc/childproctest"
)

func TestOutput(t *testing.T) {
	out, errOut, err := Output(context.Background(), "sh", "-c", "echo out; echo err >&2")
	require.NoError(t, err)
	assert.Equal(t, "out\n", string(out))
	assert.Equal(t, "err\n", string(errOut))

	dir := t.TempDir()
	out, _, err = OutputIn(context.Background(), dir, "pwd")
	require.NoError(t, err)
	assert.Equal(t, dir, strings.TrimSpace(string(out)))

	_, _, err = Output(context.Background(), "sh", "-c", "exit 3")
	assert.ErrorContains(t, err, "exit status 3")
}

// TestOutputContextKillsGroup: a short command cut off by its context takes what it
// started along (as `go build` does its compilers).
func TestOutputContextKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := Output(ctx, "sh", "-c", `sleep 300 & echo $! > `+pidFile+`.tmp; mv `+pidFile+`.tmp `+pidFile+`; wait`)
		done <- err
	}()
	grandchild := waitPidFile(t, pidFile)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	childproctest.RequireGone(t, grandchild, 10*time.Second)
}

// TestStopKillsGroup: a child that ignores SIGTERM is killed after the grace, with the
// process it started.
func TestStopKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := Command("sh", "-c", `trap "" TERM; sleep 300 & echo $! > `+pidFile+`.tmp; mv `+pidFile+`.tmp `+pidFile+`; wait`)
	p, err := Start(cmd)
	require.NoError(t, err)
	grandchild := waitPidFile(t, pidFile)
	killed, err := p.Stop(context.Background(), 100*time.Millisecond)
	require.NoError(t, err)
	assert.True(t, killed, "the child ignores SIGTERM")
	assert.Error(t, p.ExitErr())
	childproctest.RequireGone(t, grandchild, 10*time.Second)

	killed, err = p.Stop(context.Background(), time.Second)
	require.NoError(t, err)
	assert.False(t, killed, "a stopped child is not stopped again")
}

func TestStopTerm(t *testing.T) {
	p, err := Start(Command("sleep", "300"))
	require.NoError(t, err)
	killed, err := p.Stop(context.Background(), 10*time.Second)
	require.NoError(t, err)
	assert.False(t, killed, "sleep ends on SIGTERM")
	assert.ErrorContains(t, p.ExitErr(), "terminated")
}

func waitPidFile(t *testing.T, path string) int {
	t.Helper()
	var pid int
	childproctest.Poll(t, 10*time.Second, "pid file "+path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		require.NoError(t, err)
		return true
	})
	return pid
}
