package serve

import (
	"context"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/experiments/simclient/simclienttest"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// startServe runs Run in the background and returns its stdin, its output, the ADS
// address it serves on, and a function that ends its input and waits for it to return.
func startServe(t *testing.T, o Options) (send func(string), out *serveLines, addr string, stop func() error) {
	t.Helper()
	s := startServeSession(t, o)
	return s.send, s.out, s.addr, func() error { return s.end(20 * time.Second) }
}

// connectSim runs a simulated Envoy against addr until the test ends.
func connectSim(t *testing.T, addr string, mode protocol.Mode) *simclient.Client {
	t.Helper()
	c, err := simclient.New(mode, "")
	require.NoError(t, err)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	stop := simclienttest.Start(context.Background(), c, conn)
	t.Cleanup(func() {
		stop()
		_ = conn.Close()
	})
	return c
}

// TestServeStormWarnsAndBoundsTheLog: after `invalid`, the library's SotW resend loop is
// a NACK storm. The console warns once it is detected, summarizes it while it lasts and
// says when it ends; past --max-log-size the log gets one summary line per second instead
// of two lines per re-send, stays readable, and its figures count every send and NACK the
// client saw.
func TestServeStormWarnsAndBoundsTheLog(t *testing.T) {
	o := serveTestOptions(t, protocol.SotW)
	o.MaxLogSize = 64 << 10
	o.StormEvery = 300 * time.Millisecond
	send, out, addr, stop := startServe(t, o)
	c := connectSim(t, addr, protocol.SotW)
	_, err := c.WaitFor(t.Context(), func(s simclient.State) bool { return len(s.Accepted[resources.RDS]) == 1 })
	require.NoError(t, err)

	send("invalid")
	serveWaitFor(t, 10*time.Second, "the storm warning", func() bool {
		return strings.Contains(out.text(), "out: warning: NACK storm on stream 1 RDS: the client rejected the same content")
	})
	serveWaitFor(t, 10*time.Second, "a periodic storm summary", func() bool {
		return regexp.MustCompile(`(?m)^out: storm: stream 1 RDS: [\d,]+ NACKs in .* \([\d,]+/s\)\. xds\.log`).MatchString(out.text())
	})
	// Let the storm run past the limit for a while: summaries, not lines, are written.
	serveWaitFor(t, 20*time.Second, "condensed storm lines in the log", func() bool {
		ev, _, err := xdslog.ReadFile(o.LogPath)
		if err != nil {
			return false
		}
		n := 0
		for _, e := range ev {
			if e.Event == xdslog.EventStorm {
				n++
			}
		}
		return n >= 2
	})
	send("valid")
	serveWaitFor(t, 10*time.Second, "the end of the storm", func() bool {
		return regexp.MustCompile(`(?m)^out: storm over: stream 1 RDS: [\d,]+ NACKs in .*, ended by an ACK; xds\.log`).MatchString(out.text())
	})
	_, err = c.WaitFor(t.Context(), func(s simclient.State) bool { return s.VersionInfo[resources.RDS] == "3" })
	require.NoError(t, err)
	client := c.State().Counters[resources.RDS]
	require.NoError(t, stop())

	fi, err := os.Stat(o.LogPath)
	require.NoError(t, err)
	// Past the limit, the log grows by one summary line (under 1 KiB) per second of storm
	// plus the few events of the recovery, not by 1.6 MB/s.
	assert.Less(t, fi.Size(), o.MaxLogSize+32<<10, "the log stays near its limit")
	ev, st, err := xdslog.ReadFile(o.LogPath)
	require.NoError(t, err)
	assert.Zero(t, st.Skipped, "the log stays parseable: %s", st.FirstSkip)
	sum := analysis.Summarize(ev)
	rds := sum.Total
	assert.Equal(t, client.Nacks, rds.Nacks, "every NACK the client sent is counted")
	var sends, unmatched int
	for _, s := range sum.Steps {
		if f := s.Types["RDS"]; f != nil {
			sends += f.Responses
			unmatched += f.Unmatched
		}
	}
	assert.Equal(t, client.Responses, sends, "every RDS response the client got is counted")
	assert.Zero(t, unmatched)
	assert.Equal(t, client.Nacks-1, rds.RejectedResends, "each NACK after the first answered a re-send of the rejected route")
}

// TestServeSessionsDoNotMerge: two serve sessions on one log are two sessions: the second
// says so on the console, each starts with a session line, and lab compare refuses the
// log until one session is chosen (compare.LoadSession).
func TestServeSessionsDoNotMerge(t *testing.T) {
	o := serveTestOptions(t, protocol.Delta)
	for i, script := range []string{"port 18081\n", "port 18082\nport 18083\n"} {
		out := newServeLines()
		require.NoError(t, Run(t.Context(), o, strings.NewReader(script), out.writer("out"), out.writer("err")))
		appended := strings.Contains(out.text(), "xds.log already held")
		assert.Equal(t, i == 1, appended, "session %d: the console says when it appends", i+1)
	}
	ev, _, err := xdslog.ReadFile(o.LogPath)
	require.NoError(t, err)
	ss := xdslog.Sessions(ev)
	require.Len(t, ss, 2)
	for i, s := range ss {
		assert.Equal(t, xdslog.EventSession, s[0].Event)
		assert.Equal(t, "1", s[1].Version, "session %d starts again at version 1", i+1)
	}
	assert.Len(t, ss[0], 4, "session 1: its line, two publishes and a step")
	assert.Len(t, ss[1], 6, "session 2: its line, three publishes and two steps")

	_, err = compare.LoadSession("A", o.LogPath, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "holds 2 sessions")
	for session := 1; session <= 2; session++ {
		_, err = compare.LoadSession("A", o.LogPath, session)
		require.NoError(t, err, "session %d", session)
	}
}

// TestServeHeldPortTouchesNoLog: a held --xds-addr port is refused with the port (and,
// from /proc, its holder) named, before the log file is created.
func TestServeHeldPortTouchesNoLog(t *testing.T) {
	l, err := loopback.Listen(0)
	require.NoError(t, err)
	defer l.Close()
	o := serveTestOptions(t, protocol.SotW)
	o.XDSAddr = l.Addr().String()
	err = Run(t.Context(), o, strings.NewReader(""), io.Discard, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), o.XDSAddr)
	assert.Contains(t, err.Error(), "in use")
	_, serr := os.Stat(o.LogPath)
	assert.True(t, os.IsNotExist(serr), "no xds.log was created")
}
