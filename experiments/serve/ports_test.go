package serve

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/loopback/loopbacktest"
)

// runServeScript runs serve on o with script as its input and returns its lines.
func runServeScript(t *testing.T, o Options, script string) []string {
	t.Helper()
	out := newServeLines()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, Run(ctx, o, strings.NewReader(script), out.writer("out"), out.writer("err")))
	return out.all()
}

// matchLine returns the groups of the first line matching pattern.
func matchLine(t *testing.T, lines []string, pattern string) []string {
	t.Helper()
	re := regexp.MustCompile(pattern)
	for _, l := range lines {
		if m := re.FindStringSubmatch(l); m != nil {
			return m
		}
	}
	require.Failf(t, "no line matches", "%s in:\n%s", pattern, strings.Join(lines, "\n"))
	return nil
}

// TestServeFreePorts: with --free-ports every port flag not given gets a free loopback
// port, printed first in one line, and serve uses those: the xDS address it serves on,
// the listener in the state (request's hint names it), the backends it starts. A port
// flag that was given is kept and not listed.
func TestServeFreePorts(t *testing.T) {
	const addr = `127\.0\.0\.1:(\d+)`
	t.Run("every port", func(t *testing.T) {
		o := serveTestOptions(t, "sotw")
		o.FreePorts, o.WithInventory = true, true
		lines := runServeScript(t, o, "request\nquit\n")
		m := matchLine(t, lines, `^out: free ports: xDS `+addr+`, listener `+addr+`, inventory v1 `+addr+`, v2 `+addr+`$`)
		assert.Equal(t, "out: free ports: ", lines[0][:len("out: free ports: ")], "printed first")
		seen := map[string]bool{}
		for i, def := range []int{18000, 19000, 18080, 18081} {
			assert.NotEqual(t, strconv.Itoa(def), m[i+1], "not the default")
			assert.False(t, seen[m[i+1]], "each port once")
			seen[m[i+1]] = true
		}
		matchLine(t, lines, `^out: serving sotw ADS on 127\.0\.0\.1:`+m[1]+` `)
		matchLine(t, lines, `^out: inventory: v1 on 127\.0\.0\.1:`+m[3]+`, v2 on 127\.0\.0\.1:`+m[4]+` `)
		matchLine(t, lines, `^err: error: request needs .*curl http://127\.0\.0\.1:`+m[2]+`/quote`)
	})
	t.Run("given flags kept", func(t *testing.T) {
		o := serveTestOptions(t, "sotw")
		keep := loopbacktest.FreePorts(t, 1)[0]
		o.FreePorts, o.ListenerPort = true, keep
		o.Given = func(opt string) bool { return opt == OptionListenerPort }
		lines := runServeScript(t, o, "request\nquit\n")
		m := matchLine(t, lines, `^out: free ports: xDS `+addr+`, inventory v1 `+addr+`$`)
		matchLine(t, lines, `^out: serving sotw ADS on 127\.0\.0\.1:`+m[1]+` `)
		matchLine(t, lines, `^err: error: request needs .*curl http://127\.0\.0\.1:`+strconv.Itoa(keep)+`/quote`)
	})
	t.Run("off", func(t *testing.T) {
		lines := runServeScript(t, serveTestOptions(t, "sotw"), "quit\n")
		assert.NotRegexp(t, `free ports`, strings.Join(lines, "\n"))
	})
}
