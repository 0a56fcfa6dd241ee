package main

import (
	"bytes"
	"regexp"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
)

// lab version and lab --version name go-control-plane's module version, the Go version
// and the Envoy release lab run would start.
func TestVersion(t *testing.T) {
	bin := envoytest.Require(t)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		t.Run(args[0], func(t *testing.T) {
			code, out, stderr := execLab(args...)
			require.Equal(t, 0, code, stderr)
			assert.Regexp(t, `(?m)^lab: +\S+`, out)
			assert.Regexp(t, `(?m)^go-control-plane: v0\.14\.0 \(envoy API module v1\.40\.0\)$`, out)
			assert.Regexp(t, `(?m)^go: +`+runtime.Version()+` `, out)
			assert.Regexp(t, `(?m)^envoy: +1\.40\.0 at `+regexp.QuoteMeta(bin.Path)+` \(from `+regexp.QuoteMeta(bin.Source)+`; version: [0-9a-f]+/1\.40\.0/`, out)
			assert.Empty(t, stderr)
		})
	}
}

// A missing Envoy is said on its line; the command still succeeds.
func TestVersionWithoutEnvoy(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, runVersion(versionOptions{envoyBin: "/nonexistent/envoy"}, &out))
	assert.Regexp(t, `(?m)^envoy: +not found: envoy from flag \("/nonexistent/envoy"\): .*make envoy`, out.String())
	assert.Regexp(t, `(?m)^go-control-plane: v0\.14\.0`, out.String())
}

// The lab's line carries the VCS stamp when the build has one, "(devel)" without.
func TestLabVersion(t *testing.T) {
	stamped := &debug.BuildInfo{Main: debug.Module{Path: "github.com/xds-workbench/lab", Version: "v0.3.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "4fdcec8aa"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-12-01T17:00:00Z"},
	}}
	assert.Equal(t, "v0.3.0 (revision 4fdcec8aa, modified, committed 2026-12-01T17:00:00Z)", labVersion(stamped))
	clean := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}}
	assert.Equal(t, "(devel) (revision abc)", labVersion(clean))
	assert.Equal(t, "(devel) (no VCS revision: built without VCS stamping)", labVersion(&debug.BuildInfo{}))
	assert.Equal(t, "(devel) (no build info)", labVersion(nil))
}
