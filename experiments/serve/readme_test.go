package serve

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/testenv"
)

// TestREADMEServeSessionIsServes: the README's serve session is what serve shows: no
// prompt (serve prints none), each line either a command typed (as serve parses it) or
// one of serve's own output lines.
func TestREADMEServeSessionIsServes(t *testing.T) {
	var session []string
	for _, b := range testenv.READMEBlocks(t, "") {
		if len(b) > 0 && b[0] == "port 18081" {
			session = b
		}
	}
	require.NotEmpty(t, session, "the session block starts with the command port 18081")
	output := regexp.MustCompile(`^(version \d+: |version \d+ published to node |stream \d+[ :]|request serve-\d+: |  (TYPE|RESOURCE|CDS|EDS|LDS|RDS) |storm over: |\.\.\.$)`)
	var typed []string
	for _, l := range session {
		assert.False(t, strings.HasPrefix(l, ">"), "serve prints no prompt: %q", l)
		if output.MatchString(l) {
			continue
		}
		cmd, err := parseServeCommand(l)
		if assert.NoError(t, err, "%q is neither serve's output nor a command", l) {
			assert.NotEqual(t, verbNone, cmd.Verb, l)
			typed = append(typed, cmd.String())
		}
	}
	assert.Equal(t, []string{"port 18081", "request", "invalid", "status", "valid"}, typed)
}
