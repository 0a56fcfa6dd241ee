package protocol

import (
	"context"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/experiments/simclient/simclienttest"
	"github.com/xds-workbench/lab/experiments/testenv"
	"github.com/xds-workbench/lab/shared/bufconntest"
	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/publish/publishtest"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/shared/xdslog/xdslogtest"
	"github.com/xds-workbench/lab/sotw"
)

const wait = 10 * time.Second

// variant is one front-end configuration under test.
type variant struct {
	name     string
	mode     protocol.Mode
	versions publish.VersionStrategy
	policy   sotw.NackPolicy
	// cache is the library cache (publish.SnapshotCache when empty).
	cache publish.Cache
}

var variants = []variant{
	{"sotw-uniform-resend", protocol.SotW, publish.Uniform, sotw.Resend, ""},
	{"sotw-pertype-hold", protocol.SotW, publish.PerType, sotw.Hold, ""},
	{"delta", protocol.Delta, "", "", ""},
	// The LinearCache per type behind a MuxCache (--cache linear): versions per type by
	// construction and a NACK holds, so SotW is per-type and hold.
	{"sotw-linear", protocol.SotW, publish.PerType, sotw.Hold, publish.LinearCache},
	{"delta-linear", protocol.Delta, "", "", publish.LinearCache},
	// The workbench's indexed cache (--cache indexed, shared/indexcache): the
	// LinearCache's semantics, so every LinearCache expectation holds for it too.
	{"sotw-indexed", protocol.SotW, publish.PerType, sotw.Hold, publish.IndexedCache},
	{"delta-indexed", protocol.Delta, "", "", publish.IndexedCache},
}

// linear reports whether v serves with the LinearCache's semantics: from the
// LinearCaches or from the indexed cache.
func (v variant) linear() bool { return v.cache.VersionsPerType() }

type harness struct {
	t   *testing.T
	v   variant
	log *xdslogtest.Log
	rec *xdslog.Recorder
	// cache is what pub feeds and fe serves when the test wires them itself
	// (TestOnePublisherFeedsBothTransports); nil on a control plane's harness.
	cache cachev3.Cache
	pub   publish.StatePublisher
	fe    frontend.FrontEnd
	lis   *bufconntest.Listener
	// addr, when set, is a real control plane's 127.0.0.1 address to dial instead of lis.
	addr string
	ctx  context.Context
}

// recordingHarness is a harness with its context and recorder, and no control plane
// yet: the caller starts one and cancels the context when it stops it.
func recordingHarness(t *testing.T, v variant) (*harness, context.CancelFunc) {
	t.Helper()
	// First, so that its check runs after every cleanup the caller registers.
	testenv.VerifyNoLeaks(t)
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, v: v, log: &xdslogtest.Log{}, ctx: ctx}
	h.rec = xdslog.NewRecorder(h.log, v.mode)
	return h, cancel
}

// newHarness serves v on the workbench's control plane (controlplane.New), as `lab serve`
// and `lab run` build it, over a bufconn listener.
func newHarness(t *testing.T, v variant) *harness {
	t.Helper()
	h, cancel := recordingHarness(t, v)
	cp, err := controlplane.New(controlplane.Options{Mode: v.mode, Recorder: h.rec, Versions: v.versions, NackPolicy: v.policy, Cache: v.cache})
	require.NoError(t, err)
	h.fe, h.pub = cp.FrontEnd(), cp.Publisher()
	h.lis = bufconntest.Serve(t, cp.Serve, func() {
		cancel()
		cp.Stop()
	})
	return h
}

func (h *harness) dial() *grpc.ClientConn {
	h.t.Helper()
	if h.addr == "" {
		return h.lis.Dial(h.t)
	}
	conn, err := grpc.NewClient("passthrough:///"+h.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(h.t, err)
	h.t.Cleanup(func() { conn.Close() })
	return conn
}

// publish builds and publishes s under the step label.
func (h *harness) publish(step string, s resources.State) *resources.Set {
	h.t.Helper()
	h.rec.SetStep(step)
	return publishtest.Publish(h.t, h.pub, s)
}

// connect runs a simulated client on a new stream; stop ends the stream and waits.
func (h *harness) connect(c *simclient.Client) (stop func()) {
	h.t.Helper()
	conn := h.dial()
	stopClient := simclienttest.Start(h.ctx, c, conn)
	return func() {
		stopClient()
		conn.Close()
	}
}

func (h *harness) waitClient(c *simclient.Client, what string, cond func(simclient.State) bool) simclient.State {
	h.t.Helper()
	return simclienttest.WaitFor(h.t, c, wait, what, cond)
}

// waitLog reads the xds.log until cond holds, for up to wait.
func (h *harness) waitLog(what string, cond func([]xdslog.Event) bool) []xdslog.Event {
	h.t.Helper()
	return h.log.WaitFor(h.t, wait, what, cond)
}

func filter(ev []xdslog.Event, keep func(xdslog.Event) bool) []xdslog.Event {
	var out []xdslog.Event
	for _, e := range ev {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

func of(step, event string) func(xdslog.Event) bool {
	return func(e xdslog.Event) bool { return e.Step == step && e.Event == event }
}

// ackedAll holds once step has at least as many ACKs as sends.
func ackedAll(step string) func([]xdslog.Event) bool {
	return func(ev []xdslog.Event) bool {
		return len(filter(ev, of(step, xdslog.EventAck))) >= len(filter(ev, of(step, xdslog.EventSend)))
	}
}

func ofType(step, event, typ string) func(xdslog.Event) bool {
	return func(e xdslog.Event) bool { return e.Step == step && e.Event == event && e.Type == typ }
}

// allAccepted reports whether the client accepted every resource of set with versions
// matching want (name -> version).
func acceptedHashes(s simclient.State, set *resources.Set) bool {
	for _, t := range resources.CoreTypes {
		for _, r := range set.ByType[t].All() {
			if s.Accepted[t][r.Name].Hash != r.Hash {
				return false
			}
		}
	}
	return true
}

func nodeProto() *corev3.Node { return &corev3.Node{Id: resources.NodeID, Cluster: "test"} }
