package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/mainjob"
	"github.com/xds-workbench/lab/experiments/runner"
)

// lab report only parses its flags; the job gets them as mainjob.Options.
func TestReportFlags(t *testing.T) {
	var got mainjob.Options
	cmd := newReportCmdWith(func(_ context.Context, o mainjob.Options) error { got = o; return nil })
	out := filepath.Join(t.TempDir(), "lab")
	cmd.SetArgs([]string{"--out", out, "--client", "sim", "--verbose"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, out, got.Out)
	assert.Equal(t, runner.ClientSim, got.Client)
	assert.True(t, got.Verbose)
	assert.NotNil(t, got.Stdout)

	cmd = newReportCmdWith(func(_ context.Context, o mainjob.Options) error { got = o; return nil })
	cmd.SetArgs(nil)
	require.NoError(t, cmd.Execute())
	assert.Regexp(t, `^experiments/evidence/lab-\d{8}T\d{6}Z$`, filepath.ToSlash(got.Out), "the default --out")
	assert.Equal(t, runner.ClientAuto, got.Client)
}

// A used --out is one line, and nothing runs.
func TestReportRefusesAUsedOut(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x"), nil, 0o644))
	code, stdout, stderr := execLab("report", "--out", dir)
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Regexp(t, `^lab report: --out .*: out .* holds 1 entries: want a new or empty directory\n$`, stderr)
}
