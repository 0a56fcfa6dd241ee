package envoytest

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/testenv"
)

// recordingTB captures how find ends a test without ending this one.
type recordingTB struct {
	testing.TB
	fatal, skip string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recordingTB) Skipf(format string, args ...any) {
	r.skip = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recordingTB) Skip(args ...any) {
	r.skip = fmt.Sprint(args...)
	runtime.Goexit()
}
func (r *recordingTB) Log(args ...any) {}

func runRequire(tb *recordingTB) (b envoy.Binary, returned bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		b = find(tb)
		returned = true
	}()
	<-done
	return b, returned
}

func TestRequireWithoutEnvoy(t *testing.T) {
	t.Chdir(t.TempDir()) // no .venv above
	t.Setenv("ENVOY_BIN", "")
	t.Setenv("PATH", t.TempDir())

	t.Setenv("CI", "")
	r := &recordingTB{TB: t}
	_, returned := runRequire(r)
	assert.False(t, returned)
	assert.Empty(t, r.fatal)
	assert.Contains(t, r.skip, "Envoy not found: run `make envoy`", "the skip names the component and how to get it")

	t.Setenv("CI", "true")
	r = &recordingTB{TB: t}
	_, returned = runRequire(r)
	assert.False(t, returned)
	assert.Empty(t, r.skip)
	assert.Contains(t, r.fatal, "CI=true")
	assert.Contains(t, r.fatal, "make envoy")
}

func TestRequireWithEnvoy(t *testing.T) {
	fake := testenv.FakeEnvoy(t, "1.40.0")
	t.Setenv("ENVOY_BIN", fake)
	t.Setenv("CI", "true")
	r := &recordingTB{TB: t}
	b, returned := runRequire(r)
	assert.True(t, returned)
	assert.Equal(t, envoy.Binary{Path: fake, Source: envoy.SourceEnv, Version: "1.40.0",
		VersionLine: fake + "  version: 0123abcd/1.40.0/Clean/RELEASE/BoringSSL"}, b)
	assert.Equal(t, filepath.Base(fake), "envoy")
}
