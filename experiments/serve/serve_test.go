package serve

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rsrc "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/shared/option"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// serveLines collects the lines written to out and errOut in one ordered list, so a test
// sees which stream each line went to and in what order.
type serveLines struct {
	mu    sync.Mutex
	lines []string // "out: ..." or "err: ..."
	part  map[string]*bytes.Buffer
}

func newServeLines() *serveLines { return &serveLines{part: map[string]*bytes.Buffer{}} }

func (s *serveLines) writer(tag string) io.Writer { return serveTagWriter{s, tag} }

type serveTagWriter struct {
	s   *serveLines
	tag string
}

func (w serveTagWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	b := w.s.part[w.tag]
	if b == nil {
		b = &bytes.Buffer{}
		w.s.part[w.tag] = b
	}
	b.Write(p)
	for {
		line, err := b.ReadString('\n')
		if err != nil {
			b.Reset()
			b.WriteString(line)
			return len(p), nil
		}
		w.s.lines = append(w.s.lines, w.tag+": "+strings.TrimSuffix(line, "\n"))
	}
}

func (s *serveLines) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

func (s *serveLines) text() string { return strings.Join(s.all(), "\n") }

func serveTestOptions(t *testing.T, mode protocol.Mode) Options {
	o := DefaultOptions()
	o.Mode = mode
	o.XDSAddr = "127.0.0.1:0"
	o.LogPath = filepath.Join(t.TempDir(), "xds.log")
	return o
}

// serveWaitFor polls cond until it holds or the deadline passes.
func serveWaitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, timeout, 10*time.Millisecond, "waiting for %s", what)
}

// serveAddr waits for the serving line ("ADS on 127.0.0.1:PORT ...") matching line, a
// pattern whose one group is the address, and returns the address.
func serveAddr(t *testing.T, out *serveLines, line string) string {
	t.Helper()
	re := regexp.MustCompile(line)
	var addr string
	serveWaitFor(t, 10*time.Second, "the serving line", func() bool {
		m := re.FindStringSubmatch(out.text())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	return addr
}

// The script mixes every state command with every bad one; each bad command must print
// exactly one error line and leave the version alone.
const serveScript = `port 18081
frobnicate
invalid
port 0
valid
port 70000
port abc
remove
port 127.0.0.1:9000

status now
port 18081 18082
restore
invalid route
port
status
`

func TestServeScript(t *testing.T) {
	for _, mode := range []protocol.Mode{protocol.SotW, protocol.Delta} {
		t.Run(mode.String(), func(t *testing.T) {
			o := serveTestOptions(t, mode)
			// The log is appended to, never truncated.
			require.NoError(t, os.WriteFile(o.LogPath, []byte("line from an earlier run\n"), 0o644))
			out := newServeLines()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			require.NoError(t, Run(ctx, o, strings.NewReader(serveScript), out.writer("out"), out.writer("err")))

			version := `^out: version %d: `
			err := `^err: error: `
			want := []string{
				`^out: serving ` + mode.String() + ` ADS on 127\.0\.0\.1:\d+ for node teaching-envoy; xds\.log: ` + regexp.QuoteMeta(o.LogPath) + ` \(type help for commands\)$`,
				`^out: xds\.log already held 0\.0 MiB: this serve appends a new session after a session line; lab compare --session picks one$`,
				fmt.Sprintf(version, 1) + `CDS \+inventory; EDS \+inventory; LDS \+quote-listener; RDS \+quote-route$`,
				fmt.Sprintf(version, 2) + `EDS ~inventory$`,
				err + `unknown command "frobnicate"`,
				fmt.Sprintf(version, 3) + `RDS ~quote-route$`,
				err + `bad port "0"`,
				fmt.Sprintf(version, 4) + `RDS ~quote-route$`,
				err + `bad port "70000"`,
				err + `bad port "abc"`,
				fmt.Sprintf(version, 5) + `CDS -inventory; EDS -inventory$`,
				err + `bad port "127\.0\.0\.1:9000"`,
				err + `status takes no arguments but --json \(got "now"\)`,
				err + `port takes one argument`,
				fmt.Sprintf(version, 6) + `CDS \+inventory; EDS \+inventory$`,
				err + `invalid takes no arguments`,
				err + `port needs the endpoint port`,
				`^out: version 6 published to node teaching-envoy; no stream connected$`,
				`^out: no stream for node teaching-envoy, the node this server publishes to: nothing receives version 6 \(start Envoy with the bootstrap lab bootstrap --mode ` + mode.String() + ` prints\)$`,
				`^out: stopping: end of input$`,
			}
			got := out.all()
			require.Len(t, got, len(want), "output:\n%s", out.text())
			for i, w := range want {
				assert.Regexp(t, w, got[i], "line %d", i)
			}

			raw, rerr := os.ReadFile(o.LogPath)
			require.NoError(t, rerr)
			require.True(t, strings.HasPrefix(string(raw), "line from an earlier run\n"), "log was not appended to")
			ev, st, rerr := xdslog.ReadFile(o.LogPath)
			require.NoError(t, rerr)
			assert.Equal(t, 1, st.Skipped, "only the earlier run's line is not an event")
			require.NotEmpty(t, ev)
			assert.Equal(t, xdslog.EventSession, ev[0].Event, "the session line comes first")
			assert.NotEmpty(t, ev[0].Session)
			// Each state command is a step named after it, written before its publish.
			var steps []string
			var publishes []xdslog.Event
			for _, e := range ev[1:] {
				if e.Event == xdslog.EventStep {
					steps = append(steps, e.Step)
					continue
				}
				publishes = append(publishes, e)
			}
			assert.Equal(t, []string{"port 18081", "invalid", "valid", "remove", "restore"}, steps)
			ev = publishes
			wantChanged := [][]string{{"CDS", "EDS", "LDS", "RDS"}, {"EDS"}, {"RDS"}, {"RDS"}, {"CDS", "EDS"}, {"CDS", "EDS"}}
			require.Len(t, ev, len(wantChanged), "no client connected: publish and step events only")
			for i, e := range ev {
				assert.Equal(t, xdslog.EventPublish, e.Event)
				assert.Equal(t, mode, e.Mode)
				assert.Equal(t, fmt.Sprint(i+1), e.Version)
				assert.Equal(t, wantChanged[i], e.Changed, "version %s", e.Version)
			}
			// Version 5 is the state without the cluster and its endpoints.
			for _, r := range ev[4].Resources {
				assert.NotEqual(t, resources.ClusterName, r.Name, "version 5 still has %s %s", r.Type, r.Name)
			}
		})
	}
}

func TestServeHelpAndQuit(t *testing.T) {
	o := serveTestOptions(t, protocol.SotW)
	out := newServeLines()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := "help\nquit\nport 18081\n" // nothing after quit runs
	require.NoError(t, Run(ctx, o, strings.NewReader(in), out.writer("out"), out.writer("err")))
	text := out.text()
	for _, cmd := range []string{"port N", "invalid", "valid", "remove", "restore", "status", "help", "quit"} {
		assert.Contains(t, text, "\nout:   "+cmd+" ")
	}
	assert.Contains(t, text, "out: stopping: quit")
	assert.NotContains(t, text, "version 2")
	assert.NotContains(t, text, "err:")
}

func TestServeLongLineIgnored(t *testing.T) {
	o := serveTestOptions(t, protocol.Delta)
	out := newServeLines()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The tail of an over-long line must not be read as a command.
	in := strings.Repeat("x", 3*serveMaxLine) + "invalid\nport 18081\n"
	require.NoError(t, Run(ctx, o, strings.NewReader(in), out.writer("out"), out.writer("err")))
	got := out.all()
	require.Len(t, got, 5, "output:\n%s", out.text())
	assert.Regexp(t, `^err: error: line longer than 4096 bytes ignored$`, got[2])
	assert.Regexp(t, `^out: version 2: EDS ~inventory$`, got[3])
}

func TestServeStopsOnSignalContext(t *testing.T) {
	o := serveTestOptions(t, protocol.SotW)
	out := newServeLines()
	inR, inW := io.Pipe()
	defer inW.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o, inR, out.writer("out"), out.writer("err")) }()
	serveWaitFor(t, 10*time.Second, "version 1", func() bool { return strings.Contains(out.text(), "version 1:") })
	cancel() // what SIGINT/SIGTERM do through signal.NotifyContext
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop when its context ended")
	}
	assert.Contains(t, out.text(), "out: stopping: interrupted")
}

// TestServeRefusesBadOptions: a bad option is refused before anything starts, as an
// *option.Error naming the option (cmd/lab words it as its flag) with the rule broken.
func TestServeRefusesBadOptions(t *testing.T) {
	cases := []struct {
		name   string
		edit   func(*Options)
		option string
		value  string
		rule   error
	}{
		{"no mode", func(o *Options) { o.Mode = "" }, OptionMode, "", ErrNoMode},
		{"bad mode", func(o *Options) { o.Mode = "grpc" }, OptionMode, "grpc", nil},
		{"non-loopback", func(o *Options) { o.XDSAddr = "0.0.0.0:18000" }, OptionXDSAddr, "0.0.0.0:18000", nil},
		{"inventory port", func(o *Options) { o.InventoryPort = 0 }, OptionInventoryPort, "0", nil},
		{"listener port", func(o *Options) { o.ListenerPort = 70000 }, OptionListenerPort, "70000", nil},
		{"no log", func(o *Options) { o.LogPath = "" }, OptionLog, "", ErrNoLog},
		{"keepalive", func(o *Options) { o.Limits.KeepaliveMinTime = 0 }, OptionKeepaliveMinTime, "0s", nil},
		{"delta with nack policy", func(o *Options) { o.Mode = "delta"; o.NackPolicy = "hold" }, OptionNackPolicy, "hold", ErrSotWOnly},
		{"bad versions", func(o *Options) { o.SotWVersions = "sometimes" }, OptionSotWVersions, "sometimes", ErrUnknownVersions},
		{"bad policy", func(o *Options) { o.NackPolicy = "ignore" }, OptionNackPolicy, "ignore", ErrUnknownNackPolicy},
		{"bad cache", func(o *Options) { o.Cache = "lru" }, OptionCache, "lru", ErrUnknownCache},
		{"linear uniform", func(o *Options) { o.Cache = publish.LinearCache; o.SotWVersions = "uniform" }, OptionSotWVersions, "uniform", controlplane.ErrUniformNeedsSnapshot},
		{"linear resend", func(o *Options) { o.Cache = publish.LinearCache; o.NackPolicy = "resend" }, OptionNackPolicy, "resend", controlplane.ErrResendNeedsSnapshot},
		{"on demand with sotw", func(o *Options) { o.OnDemand.Clusters = true }, OptionOnDemand, "cds", resources.ErrOnDemandNeedsDelta},
		{"zero streams", func(o *Options) { o.Limits.MaxStreams = 0 }, OptionMaxStreams, "0", nil},
		{"no port for v2", func(o *Options) { o.WithInventory = true; o.InventoryPort = 65535 }, OptionInventoryPort, "65535", ErrNoRoomForV2},
		{"unknown client", func(o *Options) { o.Client = "curl" }, OptionClient, "curl", ErrUnknownClient},
		{"grpc with delta", func(o *Options) { o.Mode = "delta"; o.Client = ClientGRPC }, OptionClient, ClientGRPC, grpcclient.ErrNoDelta},
		{"grpc with envoy", func(o *Options) { o.Client = ClientGRPC; o.WithEnvoy = true }, OptionClient, ClientGRPC, ErrGRPCWithEnvoy},
		{"metrics off loopback", func(o *Options) { o.MetricsAddr = "0.0.0.0:9090" }, OptionMetricsAddr, "0.0.0.0:9090", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := serveTestOptions(t, protocol.SotW)
			tc.edit(&o)
			out := newServeLines()
			err := Run(context.Background(), o, strings.NewReader("port 18081\n"), out.writer("out"), out.writer("err"))
			var oe *option.Error
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, tc.option, oe.Option)
			assert.Equal(t, tc.value, oe.Value)
			if tc.rule != nil {
				assert.ErrorIs(t, err, tc.rule)
			}
			assert.NotContains(t, err.Error(), "\n")
			assert.Empty(t, out.all(), "nothing served")
			_, serr := os.Stat(o.LogPath)
			assert.True(t, o.LogPath == "" || os.IsNotExist(serr), "no xds.log was created")
		})
	}
}

// TestServeLogDirMissing: a log that cannot be opened is an error with context.
func TestServeLogDirMissing(t *testing.T) {
	o := serveTestOptions(t, protocol.SotW)
	o.LogPath = filepath.Join(o.LogPath, "no", "such", "xds.log")
	out := newServeLines()
	err := Run(context.Background(), o, strings.NewReader("port 18081\n"), out.writer("out"), out.writer("err"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "open xds.log")
	assert.Empty(t, out.all(), "nothing served")
}

// TestValidateAcceptsLocalhost: localhost means 127.0.0.1, and validation maps it so.
func TestValidateAcceptsLocalhost(t *testing.T) {
	o := serveTestOptions(t, "sotw")
	o.XDSAddr = "localhost:0"
	require.NoError(t, o.Validate())
	assert.Equal(t, "127.0.0.1:0", o.XDSAddr)
}

// serveClient is a raw ADS client that subscribes to CDS (wildcard) then EDS for the
// clusters it got, and ACKs every response.
func serveClient(t *testing.T, ctx context.Context, addr string, mode protocol.Mode) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	c := discovery.NewAggregatedDiscoveryServiceClient(conn)
	node := &core.Node{Id: resources.NodeID, Cluster: "test"}
	edsNames := []string{resources.ClusterName}
	if mode == protocol.SotW {
		s, err := c.StreamAggregatedResources(ctx)
		require.NoError(t, err)
		require.NoError(t, s.Send(&discovery.DiscoveryRequest{Node: node, TypeUrl: rsrc.ClusterType}))
		go func() {
			names := map[string][]string{rsrc.ClusterType: nil, rsrc.EndpointType: edsNames}
			edsSent := false
			for {
				r, err := s.Recv()
				if err != nil {
					return
				}
				if s.Send(&discovery.DiscoveryRequest{Node: node, TypeUrl: r.GetTypeUrl(), VersionInfo: r.GetVersionInfo(), ResponseNonce: r.GetNonce(), ResourceNames: names[r.GetTypeUrl()]}) != nil {
					return
				}
				if !edsSent {
					edsSent = true
					if s.Send(&discovery.DiscoveryRequest{Node: node, TypeUrl: rsrc.EndpointType, ResourceNames: edsNames}) != nil {
						return
					}
				}
			}
		}()
		return
	}
	s, err := c.DeltaAggregatedResources(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Send(&discovery.DeltaDiscoveryRequest{Node: node, TypeUrl: rsrc.ClusterType}))
	go func() {
		edsSent := false
		for {
			r, err := s.Recv()
			if err != nil {
				return
			}
			if s.Send(&discovery.DeltaDiscoveryRequest{Node: node, TypeUrl: r.GetTypeUrl(), ResponseNonce: r.GetNonce()}) != nil {
				return
			}
			if !edsSent {
				edsSent = true
				if s.Send(&discovery.DeltaDiscoveryRequest{Node: node, TypeUrl: rsrc.EndpointType, ResourceNamesSubscribe: edsNames}) != nil {
					return
				}
			}
		}
	}()
}

func TestServeStatusShowsAcceptedVersions(t *testing.T) {
	for _, mode := range []protocol.Mode{protocol.SotW, protocol.Delta} {
		t.Run(mode.String(), func(t *testing.T) {
			o := serveTestOptions(t, mode)
			srv := startServeSession(t, o)
			out, send, addr := srv.out, srv.send, srv.addr

			clientCtx, stopClient := context.WithCancel(srv.ctx)
			defer stopClient()
			serveClient(t, clientCtx, addr, mode)

			// In SotW the resource's version is the label, shown beside its hash; in delta
			// it is the content hash, so only the hash is shown, and the label the type
			// runs is system_version_info.
			resVersion := func(v string) string {
				if mode == protocol.SotW {
					return v + `\s+`
				}
				return ""
			}
			row := func(typ, label string) *regexp.Regexp {
				return regexp.MustCompile(`(?ms)^out:   ` + typ + `\s+SYNCED\s+` + label + `\s*$.*^out:   ` + typ + ` inventory\s+` + resVersion(label) + `[0-9a-f]{12}$`)
			}
			statusShows := srv.statusShows
			serveWaitFor(t, 10*time.Second, "status rows for version 1", statusShows(row("CDS", "1"), row("EDS", "1")))
			assert.Contains(t, out.text(), "out: version 1 published to node teaching-envoy; 1 stream connected")
			assert.Regexp(t, `(?m)^out: stream 1: node teaching-envoy, peer 127\.0\.0\.1:\d+, `+mode.String()+` ADS, snapshot cache, connected since \d\d:\d\d:\d\d \(\S+\)$`, out.text())
			assert.Regexp(t, `(?m)^out:   TYPE\s+STATE\s+RUNS\s+DETAIL$`, out.text())

			// A port change moves EDS; the client ACKs it and status follows. SotW with
			// uniform versions re-sends CDS too (accepted as 2); delta leaves CDS at 1.
			send("port 18081")
			cdsLabel := "2"
			if mode == protocol.Delta {
				cdsLabel = "1"
			}
			serveWaitFor(t, 10*time.Second, "status rows for version 2", statusShows(row("EDS", "2"), row("CDS", cdsLabel)))

			stopClient()
			serveWaitFor(t, 10*time.Second, "the stream to close", func() bool {
				return strings.Contains(strings.Join(srv.command("status", 5*time.Second), "\n"), "no stream connected")
			})
			require.NoError(t, srv.end(10*time.Second))
			for _, l := range out.all() {
				if strings.HasPrefix(l, "err:") {
					assert.Regexp(t, `^err: error: unknown command "end-of-status-\d+"`, l)
				}
			}

			ev, _, err := xdslog.ReadFile(o.LogPath)
			require.NoError(t, err)
			acks := map[string]int{}
			for _, e := range ev {
				if e.Event == xdslog.EventAck {
					acks[e.Type]++
				}
			}
			assert.GreaterOrEqual(t, acks["CDS"], 1)
			assert.GreaterOrEqual(t, acks["EDS"], 2, "EDS version 1 and 2 were ACKed")
		})
	}
}

// TestServeLinear: lab serve --cache linear serves both protocols from the LinearCaches;
// status shows each type at its own cache's version (prefix of this start, then the
// number of updates): after a port change EDS is at .2 and CDS still at .1.
func TestServeLinear(t *testing.T) {
	for _, mode := range []protocol.Mode{protocol.SotW, protocol.Delta} {
		t.Run(mode.String(), func(t *testing.T) {
			o := serveTestOptions(t, mode)
			o.Cache = publish.LinearCache
			srv := startServeSessionLine(t, o, `ADS on (127\.0\.0\.1:\d+) for node teaching-envoy from a LinearCache per type`)
			clientCtx, stopClient := context.WithCancel(srv.ctx)
			defer stopClient()
			serveClient(t, clientCtx, srv.addr, mode)
			row := func(typ, n string) *regexp.Regexp {
				return regexp.MustCompile(`(?ms)^out:   ` + typ + `\s+SYNCED\s+[0-9a-z]+\.` + n + `\s*$.*^out:   ` + typ + ` inventory\s+(\S+\s+)?[0-9a-f]{12}$`)
			}
			serveWaitFor(t, 10*time.Second, "version 1 accepted", srv.statusShows(row("CDS", "1"), row("EDS", "1")))
			srv.send("port 18081")
			serveWaitFor(t, 10*time.Second, "EDS's cache moved, CDS's did not", srv.statusShows(row("EDS", "2"), row("CDS", "1")))
			stopClient()
			require.NoError(t, srv.end(10*time.Second))
			ev, _, err := xdslog.ReadFile(o.LogPath)
			require.NoError(t, err)
			var publishes int
			for _, e := range ev {
				if e.Event == xdslog.EventPublish {
					publishes++
					assert.Equal(t, fmt.Sprint(publishes), e.Version, "the publish keeps the workbench's label")
				}
			}
			assert.Equal(t, 2, publishes)
		})
	}
}
