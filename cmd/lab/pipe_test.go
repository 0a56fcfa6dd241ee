package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/runner"
	"github.com/xds-workbench/lab/shared/syncbuf"
)

// TestRunSurvivesClosedStdout is `lab run ... | head -3`: standard output is a pipe
// whose reader goes away after three lines. The run must not die of SIGPIPE: it exits 0
// (its own result), writes every file whole, and says once on stderr that the progress
// was lost.
func TestRunSurvivesClosedStdout(t *testing.T) {
	bin := buildLab(t, t.TempDir())
	dir := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(bin, "run", "--mode=delta", "--client=sim", "--free-ports", "--out", dir)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})

	sc := bufio.NewScanner(stdout)
	for i := 0; i < 3; i++ {
		require.True(t, sc.Scan(), "line %d; stderr: %s", i+1, stderr)
	}
	require.NoError(t, stdout.Close(), "what head does after three lines")

	err = waitExit(t, cmd, 2*time.Minute)
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		ws, _ := exitErr.Sys().(syscall.WaitStatus)
		require.Failf(t, "lab run did not exit 0", "exit code %d, signaled %v (%v); stderr: %s", exitErr.ExitCode(), ws.Signaled(), ws.Signal(), stderr)
	}
	require.NoError(t, err)

	assert.Equal(t, "NOT_RUN", readTrim(t, filepath.Join(dir, "envoy.result")), "the simulated client's result")
	assert.Equal(t, "0", readTrim(t, filepath.Join(dir, "run.exit")))
	var sum runner.Summary
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &sum), "summary.json is whole")
	assert.Equal(t, "NOT_RUN", sum.Result)
	require.Len(t, sum.Steps, 8, "every step ran after the reader left")
	for _, s := range sum.Steps {
		assert.True(t, s.Passed, "%s: %s", s.Name, s.Failure)
		assert.FileExists(t, filepath.Join(dir, s.Checkpoint))
	}
	assert.NotNil(t, sum.Figures)
	assert.Zero(t, assertEvidenceWhole(t, dir), "no temporary file left")

	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	require.Len(t, lines, 1, "one notice, once: %s", stderr)
	assert.Regexp(t, `^lab run: progress output lost from here \(write /dev/stdout: broken pipe\); the command goes on$`, lines[0])
}
