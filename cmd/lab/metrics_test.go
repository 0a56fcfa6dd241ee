package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/runner"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/shared/xdsmetrics/xdsmetricstest"
)

// lab run --metrics-addr serves the metrics for the whole run: the URL is printed before
// the run starts, the runner gets their observer, and what it observes is scraped.
func TestRunMetricsAddr(t *testing.T) {
	var out bytes.Buffer
	var scraped xdsmetricstest.Samples
	cmd := newRunCmdWith(func(_ context.Context, o runner.Options, _ io.Writer) error {
		if o.Observer == nil {
			return errors.New("no observer")
		}
		m := regexp.MustCompile(`\[delta\] metrics: (http://127\.0\.0\.1:\d+/metrics)\n`).FindStringSubmatch(out.String())
		if m == nil {
			return fmt.Errorf("no metrics line in %q", out.String())
		}
		o.Observer(xdslog.Event{Event: xdslog.EventSend, Mode: protocol.Delta, Type: "CDS", Resources: make(xdslog.Resources, 2), Bytes: 70})
		o.Observer(xdslog.Event{Event: xdslog.EventNack, Mode: protocol.Delta, Type: "CDS"})
		var err error
		scraped, err = xdsmetricstest.Scrape(m[1])
		return err
	})
	cmd.SetArgs([]string{"--mode", "delta", "--client", "sim", "--cache", "linear", "--out", filepath.Join(t.TempDir(), "run"), "--metrics-addr", "127.0.0.1:0"})
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	require.NoError(t, cmd.Execute())
	cds := map[string]string{"type": "CDS", "mode": "delta", "cache": "linear"}
	assert.Equal(t, 1.0, scraped[xdsmetricstest.Series("lab_xds_pushes_total", cds)])
	assert.Equal(t, 2.0, scraped[xdsmetricstest.Series("lab_xds_resources_sent_total", cds)])
	assert.Equal(t, 70.0, scraped[xdsmetricstest.Series("lab_xds_sent_bytes_total", cds)])
	assert.Equal(t, 1.0, scraped[xdsmetricstest.Series("lab_xds_nack_total", cds)])
	assert.Equal(t, 0.0, scraped[xdsmetricstest.Series("lab_xds_ack_total", cds)])

	// Without the flag the runner gets no observer.
	var got runner.Options
	cmd = newRunCmdWith(func(_ context.Context, o runner.Options, _ io.Writer) error { got = o; return nil })
	cmd.SetArgs([]string{"--mode", "delta", "--client", "sim", "--out", filepath.Join(t.TempDir(), "run")})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	require.NoError(t, cmd.Execute())
	assert.Nil(t, got.Observer)
}

// A --metrics-addr off loopback is refused in the standard one line, before anything starts.
func TestMetricsAddrRefused(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--mode", "sotw", "--metrics-addr", "0.0.0.0:9090"}, "lab serve: --metrics-addr 0.0.0.0:9090: not loopback (only 127.0.0.1 or localhost is allowed)"},
		{[]string{"run", "--mode", "delta", "--metrics-addr", "10.0.0.1:9090"}, "lab run: --metrics-addr 10.0.0.1:9090: not loopback (only 127.0.0.1 or localhost is allowed)"},
		{[]string{"run", "--mode", "delta", "--metrics-addr", "9090"}, ""},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, stdout, stderr := execLab(c.args...)
			assert.Equal(t, 1, code)
			if c.want != "" {
				assert.Equal(t, c.want+"\n", stderr)
			}
			assert.Regexp(t, `^lab `+c.args[0]+`: --metrics-addr \S+: [^\n]+\n$`, stderr)
			assert.Empty(t, stdout)
		})
	}
}
