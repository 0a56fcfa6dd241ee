package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rsrc "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// serveSession drives Run through a pipe: send writes a command line, waitLine
// waits for an output line matching a pattern, statusJSON runs status --json and decodes
// its line.
type serveSession struct {
	t    *testing.T
	ctx  context.Context // ends with the test, or a minute after the start
	out  *serveLines
	inW  *io.PipeWriter
	done chan error
	addr string
	n    int // status marks sent so far
}

// startServeSession runs Run in the background and waits for the ADS address it
// serves on.
func startServeSession(t *testing.T, o Options) *serveSession {
	t.Helper()
	return startServeSessionLine(t, o, `ADS on (127\.0\.0\.1:\d+) `)
}

// startServeSessionLine is startServeSession waiting for a serving line matching line,
// a pattern whose one group is the address.
func startServeSessionLine(t *testing.T, o Options, line string) *serveSession {
	t.Helper()
	out := newServeLines()
	inR, inW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	s := &serveSession{t: t, ctx: ctx, out: out, inW: inW, done: make(chan error, 1)}
	go func() { s.done <- Run(ctx, o, inR, out.writer("out"), out.writer("err")) }()
	s.addr = serveAddr(t, out, line)
	return s
}

func (s *serveSession) send(line string) {
	s.t.Helper()
	_, err := io.WriteString(s.inW, line+"\n")
	require.NoError(s.t, err)
}

// waitLine waits for a line matching pattern and returns it.
func (s *serveSession) waitLine(timeout time.Duration, pattern string) string {
	s.t.Helper()
	re := regexp.MustCompile(pattern)
	var got string
	serveWaitFor(s.t, timeout, pattern, func() bool {
		for _, l := range s.out.all() {
			if re.MatchString(l) {
				got = l
				return true
			}
		}
		return false
	})
	return got
}

// command runs line, then a deliberately unknown word: commands run in order, so its
// error line marks the end of line's output, which command returns once it is there.
func (s *serveSession) command(line string, within time.Duration) []string {
	s.t.Helper()
	s.n++
	mark := fmt.Sprintf("end-of-status-%d", s.n)
	before := len(s.out.all())
	s.send(line)
	s.send(mark)
	s.waitLine(within, regexp.QuoteMeta(mark))
	return s.out.all()[before:]
}

// statusShows returns a condition polling status until its output matches every row.
func (s *serveSession) statusShows(rows ...*regexp.Regexp) func() bool {
	return func() bool {
		text := strings.Join(s.command("status", 5*time.Second), "\n")
		for _, r := range rows {
			if !r.MatchString(text) {
				return false
			}
		}
		return true
	}
}

// statusJSON runs status --json and returns what it printed.
func (s *serveSession) statusJSON() serveStatus {
	s.t.Helper()
	var st serveStatus
	for _, l := range s.command("status --json", 10*time.Second) {
		if j, ok := strings.CutPrefix(l, "out: {"); ok {
			require.NoError(s.t, json.Unmarshal([]byte("{"+j), &st))
			return st
		}
	}
	s.t.Fatalf("no status --json line in:\n%s", s.out.text())
	return st
}

// waitStatus polls status --json until cond holds.
func (s *serveSession) waitStatus(timeout time.Duration, what string, cond func(serveStatus) bool) serveStatus {
	s.t.Helper()
	var st serveStatus
	serveWaitFor(s.t, timeout, what, func() bool {
		st = s.statusJSON()
		return cond(st)
	})
	return st
}

// stop ends the input and requires Run to return without error.
func (s *serveSession) stop() {
	s.t.Helper()
	require.NoError(s.t, s.end(30*time.Second))
}

// end ends the input and returns Run's error; it fails the test should Run
// not return within the timeout.
func (s *serveSession) end(within time.Duration) error {
	s.t.Helper()
	require.NoError(s.t, s.inW.Close())
	select {
	case err := <-s.done:
		return err
	case <-time.After(within):
		s.t.Fatal("Run did not stop at end of input")
		return nil
	}
}

func typeState(st serveStatus, stream int, typ string) string {
	for _, s := range st.Streams {
		if s.Stream == int64(stream) {
			return s.Types[typ].State
		}
	}
	return ""
}

// TestServeConsoleEvents: the console shows the stream opening (node, peer, protocol),
// each ACK with its version, the stream closing, and a delta client refused by a SotW
// server with the fix; status --json says SYNCED.
func TestServeConsoleEvents(t *testing.T) {
	o := serveTestOptions(t, protocol.SotW)
	s := startServeSession(t, o)
	ctx, stopClient := context.WithCancel(t.Context())
	defer stopClient()
	serveClient(t, ctx, s.addr, protocol.SotW)
	s.waitLine(10*time.Second, `^out: stream 1 open: node teaching-envoy from 127\.0\.0\.1:\d+ \(sotw ADS\)$`)
	s.waitLine(10*time.Second, `^out: stream 1 CDS ACK version 1$`)
	s.waitLine(10*time.Second, `^out: stream 1 EDS ACK version 1$`)
	s.send("port 18081")
	s.waitLine(10*time.Second, `^out: stream 1 EDS ACK version 2$`)
	s.send("request")
	s.waitLine(10*time.Second, `^err: error: request needs serve --with-envoy or --client grpc \(or send curl http://127\.0\.0\.1:19000/quote\?sku=paper yourself\)$`)
	st := s.waitStatus(10*time.Second, "EDS synced at 2", func(st serveStatus) bool {
		return len(st.Streams) == 1 && st.Streams[0].Types["EDS"].State == xdslog.TypeSynced && st.Streams[0].Types["EDS"].Version == "2"
	})
	assert.Equal(t, "teaching-envoy", st.Streams[0].Node)
	assert.Regexp(t, `^127\.0\.0\.1:\d+$`, st.Streams[0].Peer)
	assert.Empty(t, st.Notes, "the published node has a stream")
	stopClient()
	s.waitLine(10*time.Second, `^out: stream 1 closed: `)

	// A delta client on this SotW server: the refusal can end the stream before the
	// first request is even sent, so only the status it ends with is checked.
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ds, err := discovery.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(t.Context())
	require.NoError(t, err)
	_ = ds.Send(&discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: "teaching-envoy"}, TypeUrl: rsrc.ClusterType})
	_, err = ds.Recv()
	assert.Equal(t, codes.Unimplemented, status.Code(err))
	s.waitLine(10*time.Second, "^out: refused from 127\\.0\\.0\\.1:\\d+: delta stream refused: this control plane serves SotW ADS \\(StreamAggregatedResources\\) only; start Envoy with the bootstrap `lab bootstrap --mode sotw` prints \\(api_type: GRPC\\) or run the control plane with --mode=delta$")
	s.stop()
}

// TestServeConsoleQuietAndWrongNode: a client whose node ID is not the one published to
// is named on its open line and in status; --quiet keeps ACK lines off the console.
func TestServeConsoleQuietAndWrongNode(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		t.Run(fmt.Sprintf("quiet=%v", quiet), func(t *testing.T) {
			o := serveTestOptions(t, protocol.SotW)
			o.NodeID = "other"
			o.Quiet = quiet
			s := startServeSession(t, o)
			ctx, stopClient := context.WithCancel(t.Context())
			defer stopClient()
			serveClient(t, ctx, s.addr, protocol.SotW)
			st := s.waitStatus(10*time.Second, "the stream's node", func(st serveStatus) bool {
				return len(st.Streams) == 1 && st.Streams[0].Node != ""
			})
			assert.Equal(t, xdslog.TypeNotSent, typeState(st, 1, "CDS"), "nothing is sent to a node without state")
			assert.Equal(t, []string{
				"stream 1 has node ID teaching-envoy, which has no state: this server publishes to node other only",
				"no stream for node other, the node this server publishes to: nothing receives version 1 (check the node.id in Envoy's bootstrap, or serve with that --node-id)",
			}, st.Notes)
			open := `^out: stream 1 open: node teaching-envoy from 127\.0\.0\.1:\d+ \(sotw ADS\); no state for this node ID: this server publishes to node other \(serve with --node-id teaching-envoy or render the bootstrap with lab bootstrap --node-id other\)$`
			if !quiet {
				s.waitLine(10*time.Second, open)
			}
			s.stop()
			if quiet {
				for _, l := range s.out.all() {
					assert.NotRegexp(t, `^out: stream \d`, l, "--quiet prints no stream lines")
				}
			}
		})
	}
}
