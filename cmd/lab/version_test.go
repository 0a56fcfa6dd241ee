package main

import (
	"regexp"
	"runtime"
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
	code, out, stderr := execLab("version", "--envoy-bin", "/nonexistent/envoy")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `(?m)^envoy: +not found: envoy from flag \("/nonexistent/envoy"\): .*make envoy`, out)
	assert.Regexp(t, `(?m)^go-control-plane: v0\.14\.0`, out)
}
