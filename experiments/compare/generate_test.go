package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/xds-workbench/lab/delta"
	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/sotw"
)

// update regenerates the committed test data. TestGenerateTestdata rewrites the xds.log
// pairs and then the golden files (they derive from the logs); TestGolden alone rewrites
// only the golden files from the committed logs:
//
//	go test ./experiments/compare -run TestGenerateTestdata -update   # logs and goldens
//	go test ./experiments/compare -run TestGolden -update             # goldens only
var update = flag.Bool("update", false, "regenerate testdata/ (xds.log pairs and golden files)")

// The generated pairs. The main pair (the golden files) runs the scenario's protocol
// steps and stays small; the restart pair adds the two restart steps, whose reconnect
// findings are asserted separately.
var (
	mainSteps    = []string{"initial", "port-change", "invalid-route", "recover", "remove-cluster", "restore"}
	restartSteps = []string{"initial", "envoy-restart", "control-plane-restart"}
)

const (
	genPortV1 = 18080
	genPortV2 = 18081
	genWait   = 10 * time.Second
	// stormNacks is how many NACKs of the SotW storm are recorded before the recover
	// publish ends it: enough to exceed DiagramCap and exercise the "... K more" note.
	stormNacks = 30
)

func TestGenerateTestdata(t *testing.T) {
	// A generator, not a check: without -update it does nothing (returning rather than
	// skipping, so `make test`'s skip line lists only tests that lack a component).
	if !*update {
		return
	}
	started := time.Now().UTC().Format(time.RFC3339)
	for _, pair := range []struct {
		prefix string
		steps  []string
	}{{"", mainSteps}, {"restart-", restartSteps}} {
		for _, mode := range []string{xdslog.ModeSotW, xdslog.ModeDelta} {
			g := newGen(t, mode)
			for _, s := range pair.steps {
				g.run(s)
			}
			g.close()
			dir := filepath.Join("testdata", pair.prefix+mode)
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "xds.log"), g.log.bytes(), 0o644))
			meta := Meta{Mode: mode, Client: "simulated", Started: started, Steps: pair.steps}
			if mode == xdslog.ModeSotW {
				meta.SotwVersions, meta.NackPolicy = string(frontend.Uniform), string(sotw.Resend)
			}
			b, err := json.MarshalIndent(meta, "", "  ")
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "run.json"), append(b, '\n'), 0o644))
			// The simulated client stands in for Envoy: Envoy did not run.
			require.NoError(t, os.WriteFile(filepath.Join(dir, "envoy.result"), []byte("NOT_RUN\n"), 0o644))
		}
	}
	writeGoldens(t)
}

// memLog is an xds.log in memory, shared by the recorders of both control-plane instances.
type memLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (m *memLog) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.b.Write(p)
}

func (m *memLog) bytes() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return bytes.Clone(m.b.Bytes())
}

func (m *memLog) events(t *testing.T) []xdslog.Event {
	t.Helper()
	ev, st, err := xdslog.Read(bytes.NewReader(m.bytes()))
	if err != nil && m.b.Len() == 0 {
		return nil
	}
	require.NoError(t, err)
	require.Zero(t, st.Skipped, st.FirstSkip)
	return ev
}

// gen drives one front end and one simulated client through scenario steps, the way the
// runner does with Envoy, and records the data plane as the simulated client sees it.
type gen struct {
	t    *testing.T
	mode string
	log  *memLog

	server int
	rec    *xdslog.Recorder
	fe     frontend.FrontEnd
	lis    *bufconn.Listener
	srv    *grpc.Server
	cancel context.CancelFunc

	step    string
	version int
	state   resources.State
	set     *resources.Set
	client  *simclient.Client
	stop    func()
	probes  int
}

func newGen(t *testing.T, mode string) *gen {
	g := &gen{t: t, mode: mode, log: &memLog{}, state: resources.State{InventoryPort: genPortV1}}
	g.startServer(1)
	return g
}

func (g *gen) startServer(n int) {
	ctx, cancel := context.WithCancel(context.Background())
	g.server, g.cancel = n, cancel
	g.rec = xdslog.NewRecorder(g.log, g.mode, xdslog.WithServer(n))
	g.rec.SetStep(g.step)
	var err error
	if g.mode == xdslog.ModeSotW {
		g.fe, err = sotw.New(ctx, sotw.Config{Recorder: g.rec, Versions: frontend.Uniform, NackPolicy: sotw.Resend})
	} else {
		g.fe, err = delta.New(ctx, delta.Config{Recorder: g.rec})
	}
	require.NoError(g.t, err)
	g.lis = bufconn.Listen(1 << 20)
	g.srv = grpc.NewServer()
	g.fe.Register(g.srv)
	srv, lis := g.srv, g.lis
	go func() { _ = srv.Serve(lis) }()
}

func (g *gen) stopServer() {
	g.cancel()
	g.srv.Stop()
}

func (g *gen) close() {
	if g.stop != nil {
		g.stop()
	}
	g.stopServer()
	require.NoError(g.t, g.rec.Err())
}

// connect runs the client on a new stream to the current server.
func (g *gen) connect() {
	lis := g.lis
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(g.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	c := g.client
	go func() {
		defer close(done)
		_ = c.Run(ctx, conn)
	}()
	g.stop = func() {
		cancel()
		<-done
		conn.Close()
	}
}

func (g *gen) begin(step string) {
	g.step = step
	g.rec.SetStep(step)
	g.rec.Emit(xdslog.Event{Event: xdslog.EventStep})
}

func (g *gen) publish(change func(*resources.State)) {
	g.version++
	g.state.Version = fmt.Sprint(g.version)
	if change != nil {
		change(&g.state)
	}
	set, err := resources.Build(g.state)
	require.NoError(g.t, err)
	require.NoError(g.t, g.fe.Publish(context.Background(), set))
	g.set = set
}

// waitClient waits until cond holds for the client's state.
func (g *gen) waitClient(what string, cond func(simclient.State) bool) {
	ctx, cancel := context.WithTimeout(context.Background(), genWait)
	defer cancel()
	_, err := g.client.WaitFor(ctx, cond)
	require.NoError(g.t, err, "%s: waiting for %s", g.step, what)
}

// waitLog polls the log until cond holds.
func (g *gen) waitLog(what string, cond func([]xdslog.Event) bool) {
	require.Eventually(g.t, func() bool { return cond(g.log.events(g.t)) }, genWait, 2*time.Millisecond, "%s: waiting for %s", g.step, what)
}

// answered reports whether every send of the current step has an ACK or NACK.
func (g *gen) answered(ev []xdslog.Event) bool {
	type k struct {
		server     int
		stream     int64
		typ, nonce string
	}
	open := map[k]bool{}
	for _, e := range ev {
		if e.Step != g.step {
			continue
		}
		key := k{e.Server, e.Stream, e.Type, e.Nonce}
		switch e.Event {
		case xdslog.EventSend:
			open[key] = true
		case xdslog.EventAck, xdslog.EventNack:
			delete(open, key)
		}
	}
	return len(open) == 0
}

// accepted reports whether the client runs every resource of the current set and has
// ACKed a response of the current publish for each type the mode is expected to send
// (sotw, dlt). Content alone is not enough: uniform SotW re-sends unchanged types, and a
// delta re-send of content the client already runs (the recovered route) changes no
// hash, yet both must be in the step's log before the step ends.
func (g *gen) accepted(sotwTypes, deltaTypes []resources.Type) func(simclient.State) bool {
	types := deltaTypes
	if g.mode == xdslog.ModeSotW {
		types = sotwTypes
	}
	return func(s simclient.State) bool {
		for _, t := range resources.Types {
			for _, r := range g.set.ByType[t] {
				if s.Accepted[t][r.Name].Hash != r.Hash {
					return false
				}
			}
		}
		for _, t := range types {
			if s.VersionInfo[t] != g.state.Version {
				return false
			}
		}
		return true
	}
}

// settle waits for the client condition and then for every send of the step to be answered.
func (g *gen) settle(what string, cond func(simclient.State) bool) {
	g.waitClient(what, cond)
	g.waitLog("every send answered", g.answered)
}

// probe records one data-plane request as the simulated client would route it.
func (g *gen) probe(expected string) {
	g.probes++
	res := g.client.Route(resources.QuotePath)
	backend := map[string]string{
		fmt.Sprintf("127.0.0.1:%d", genPortV1): "v1",
		fmt.Sprintf("127.0.0.1:%d", genPortV2): "v2",
	}[res.Endpoint]
	correct := backend == expected && res.Status == 200
	if strings.HasPrefix(expected, "503 ") {
		correct = fmt.Sprintf("%d %s", res.Status, res.Flags) == expected
	}
	g.rec.Emit(xdslog.Event{Event: xdslog.EventDataPlane, RequestID: fmt.Sprintf("%s-%d", g.mode, g.probes),
		Status: res.Status, Backend: backend, Flags: res.Flags, Upstream: res.Endpoint,
		Client: "simulated", Expected: expected, Correct: &correct})
}

var (
	all  = []resources.Type{resources.LDS, resources.RDS, resources.CDS, resources.EDS}
	none []resources.Type
	lrc  = []resources.Type{resources.LDS, resources.RDS, resources.CDS}
)

func only(t ...resources.Type) []resources.Type { return t }

func (g *gen) run(step string) {
	g.begin(step)
	switch step {
	case "initial":
		g.publish(nil)
		var err error
		g.client, err = simclient.New(g.mode, "")
		require.NoError(g.t, err)
		g.connect()
		g.settle("initial state", g.accepted(all, all))
		g.probe("v1")
	case "port-change":
		g.publish(func(s *resources.State) { s.InventoryPort = genPortV2 })
		g.probe("v2") // right after the publish: may still reach v1
		g.settle("new endpoint", g.accepted(all, only(resources.EDS)))
		g.probe("v2")
	case "invalid-route":
		g.publish(func(s *resources.State) { s.InvalidRoute = true })
		g.probe("v2")
		want := 1
		if g.mode == xdslog.ModeSotW {
			want = stormNacks // resend policy: the NACK storm runs until the next publish
		}
		g.waitLog(fmt.Sprintf("%d route NACKs", want), func(ev []xdslog.Event) bool {
			n := 0
			for _, e := range ev {
				if e.Step == step && e.Event == xdslog.EventNack {
					n++
				}
			}
			return n >= want
		})
		if g.mode == xdslog.ModeDelta {
			g.waitLog("every send answered", g.answered)
		}
		g.probe("v2")
	case "recover":
		g.publish(func(s *resources.State) { s.InvalidRoute = false })
		g.probe("v2")
		g.settle("valid route", g.accepted(all, only(resources.RDS)))
		g.probe("v2")
	case "remove-cluster":
		g.publish(func(s *resources.State) { s.InventoryRemoved = true })
		g.probe("503 NC")
		g.settle("cluster removed", func(s simclient.State) bool {
			_, ok := s.Accepted[resources.CDS][resources.ClusterName]
			// SotW's EDS answer to a cluster-less state carries no endpoints and delta's
			// EDS removal has no version of its own: wait on the other types.
			return !ok && g.accepted(lrc, only(resources.CDS))(s)
		})
		g.probe("503 NC")
	case "restore":
		g.publish(func(s *resources.State) { s.InventoryRemoved = false })
		g.probe("v2")
		g.settle("cluster back", g.accepted(all, only(resources.CDS, resources.EDS)))
		g.probe("v2")
	case "envoy-restart":
		// A restarted Envoy has lost everything: a fresh client on a new stream.
		g.stop()
		g.waitLog("old stream closed", func(ev []xdslog.Event) bool { return g.count(ev, xdslog.EventStreamClose) == 1 })
		var err error
		g.client, err = simclient.New(g.mode, "")
		require.NoError(g.t, err)
		g.connect()
		g.settle("state again", g.accepted(all, all))
		g.probe("v1")
	case "control-plane-restart":
		// The client keeps its state; a new control-plane instance (server 2) publishes
		// the same content under the next label.
		g.stopServer()
		g.waitLog("server 1 stream closed", func(ev []xdslog.Event) bool { return g.count(ev, xdslog.EventStreamClose) == 1 })
		g.stop()
		g.startServer(2)
		g.publish(nil)
		g.connect()
		if g.mode == xdslog.ModeSotW {
			g.settle("resync", g.accepted(all, none))
		} else {
			// Delta: the client's initial_resource_versions match; nothing is sent.
			g.waitLog("resubscribed", func(ev []xdslog.Event) bool { return g.count(ev, xdslog.EventRequest) >= 2 })
			g.waitLog("every send answered", g.answered)
		}
		g.probe("v1")
	default:
		g.t.Fatalf("generator: unknown step %q", step)
	}
}

// count counts the current step's events of one kind.
func (g *gen) count(ev []xdslog.Event, kind string) int {
	n := 0
	for _, e := range ev {
		if e.Step == g.step && e.Event == kind {
			n++
		}
	}
	return n
}
