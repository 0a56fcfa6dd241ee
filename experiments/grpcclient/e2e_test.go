package grpcclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/inventory"
	"github.com/xds-workbench/lab/experiments/testenv"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/sotw"
)

// TestMain lets this test binary be the grpc client the tests start (ReexecCommand), and
// fails the package when a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	ChildMain()
	goleak.VerifyTestMain(m, testenv.LeakOptions()...)
}

// lab is one control plane, two backends and one grpc client, as a run has them.
type lab struct {
	// ctx bounds every wait of the test.
	ctx    context.Context
	dir    string
	cp     *controlplane.ControlPlane
	a, b   *inventory.Backend
	client *Client
	http   *http.Client

	mu     sync.Mutex
	events []xdslog.Event
}

func startLab(t *testing.T) *lab {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	l := &lab{ctx: ctx, dir: t.TempDir(), http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}}
	logFile, err := os.Create(filepath.Join(l.dir, "xds.log"))
	require.NoError(t, err)
	t.Cleanup(func() { logFile.Close() })
	rec := xdslog.NewRecorder(logFile, protocol.SotW, xdslog.WithObserver(func(e xdslog.Event) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.events = append(l.events, e)
	}))
	// Hold: a rejected response is not re-sent (the library's default would re-send it
	// at once, forever, to this client too).
	l.cp, err = controlplane.Start(t.Context(), controlplane.Options{Mode: protocol.SotW, Addr: loopback.Addr(0), Recorder: rec, NackPolicy: sotw.Hold})
	require.NoError(t, err)
	t.Cleanup(l.cp.Stop)
	for _, p := range []**inventory.Backend{&l.a, &l.b} {
		name := "backend-a"
		if p == &l.b {
			name = "backend-b"
		}
		*p, err = inventory.Start(name, 0, filepath.Join(l.dir, name+".log"))
		require.NoError(t, err)
		b := *p
		t.Cleanup(func() { _ = b.Stop(context.Background()) })
	}
	return l
}

func (l *lab) publish(t *testing.T, s resources.State) {
	t.Helper()
	s.Proxyless = true
	_, err := l.cp.Publish(l.ctx, s)
	require.NoError(t, err)
}

func (l *lab) startClient(t *testing.T) {
	t.Helper()
	c, err := Start(l.ctx, StartOptions{Command: ReexecCommand(), XDSAddr: l.cp.Addr(), NodeID: resources.NodeID,
		LogPath: filepath.Join(l.dir, "grpc-client.log")})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Stop(context.Background())) })
	l.client = c
}

// answer is one request through the front door.
type answer struct {
	status          int
	backend, logged string
	grpcStatus, why string
}

func (l *lab) get(t *testing.T, id string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(l.ctx, http.MethodGet, "http://"+l.client.FrontDoor()+"/quote?sku=paper", nil)
	require.NoError(t, err)
	req.Header.Set("x-request-id", id)
	resp, err := l.http.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	a := answer{status: resp.StatusCode, grpcStatus: resp.Header.Get(HeaderGRPCStatus), why: resp.Header.Get(HeaderGRPCMessage)}
	var q inventory.Quote
	if json.Unmarshal(body, &q) == nil && q.RequestID == id {
		a.backend = q.Backend
	}
	for _, b := range []*inventory.Backend{l.a, l.b} {
		if _, ok, _ := b.Lookup(id); ok {
			a.logged = b.Name()
		}
	}
	return a
}

// waitBackend sends requests until backend answers one (body and its own log agree).
func (l *lab) waitBackend(t *testing.T, backend, tag string) {
	t.Helper()
	var last answer
	for i := 0; ; i++ {
		last = l.get(t, fmt.Sprintf("%s-%d", tag, i))
		if last.status == http.StatusOK && last.backend == backend && last.logged == backend {
			return
		}
		l.waitOrFail(t, fmt.Sprintf("%s answering (last: %+v)", backend, last))
	}
}

// waitOrFail waits one poll interval, or fails the test at its deadline.
func (l *lab) waitOrFail(t *testing.T, what string) {
	t.Helper()
	select {
	case <-l.ctx.Done():
		t.Fatalf("waiting for %s: %v", what, l.ctx.Err())
	case <-time.After(50 * time.Millisecond):
	}
}

// nack is the first NACK of typ in xds.log ("" when none yet).
func (l *lab) nack(typ string) xdslog.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if e.Event == xdslog.EventNack && e.Type == typ {
			return e
		}
	}
	return xdslog.Event{}
}

// acked is what xds.log says the client's one stream ACKed, per "TYPE/name".
func (l *lab) acked(t *testing.T) map[string]string {
	t.Helper()
	st := l.cp.Recorder().Status()
	require.Len(t, st, 1, "one stream: the grpc client's")
	assert.Equal(t, resources.NodeID, st[0].Node)
	out := map[string]string{}
	for typ, byName := range st[0].Accepted {
		for name, a := range byName {
			out[typ+"/"+name] = a.Version
		}
	}
	return out
}

// csds is the client's own view, per "TYPE/name".
func (l *lab) csds(t *testing.T) map[string]*statuspb.ClientConfig_GenericXdsConfig {
	t.Helper()
	ctx, cancel := context.WithTimeout(l.ctx, 10*time.Second)
	defer cancel()
	resp, err := l.client.ClientStatus(ctx)
	require.NoError(t, err)
	out := map[string]*statuspb.ClientConfig_GenericXdsConfig{}
	for _, cfg := range resp.GetConfig() {
		assert.Equal(t, resources.NodeID, cfg.GetNode().GetId())
		for _, g := range cfg.GetGenericXdsConfigs() {
			typ, ok := resources.TypeOf(g.GetTypeUrl())
			require.True(t, ok, g.GetTypeUrl())
			out[string(typ)+"/"+g.GetName()] = g
		}
	}
	return out
}

// The proxyless shape end to end with the real grpc-go client: it ACKs every type, its
// RPCs reach the backend EDS names, an endpoint change moves them, the invalid route is
// NACKed with grpc-go's own reason while the last good route keeps serving, and CSDS
// agrees with xds.log on what was ACKed at which version.
func TestGRPCClientEndToEnd(t *testing.T) {
	testenv.SkipIfShort(t, testenv.NeedsGRPCClient)
	l := startLab(t)
	l.publish(t, resources.State{Version: "1", InventoryPort: l.a.Port()})
	l.startClient(t)
	l.waitBackend(t, "backend-a", "v1")

	l.publish(t, resources.State{Version: "2", InventoryPort: l.b.Port()})
	l.waitBackend(t, "backend-b", "v2")
	l.agree(t, nil)

	l.publish(t, resources.State{Version: "3", InventoryPort: l.b.Port(), InvalidRoute: true})
	var n xdslog.Event
	for n = l.nack("RDS"); n.Event == ""; n = l.nack("RDS") {
		l.waitOrFail(t, "the client's RDS NACK in xds.log")
	}
	assert.Contains(t, n.Error, "doesn't have a path specifier", "grpc-go's reason (xdsresource/unmarshal_rds.go, routesProtoToSlice)")
	t.Logf("grpc-go's NACK of the invalid route: %s", n.Error)
	for i := range 3 {
		a := l.get(t, fmt.Sprintf("after-nack-%d", i))
		assert.Equal(t, answer{status: 200, backend: "backend-b", logged: "backend-b", grpcStatus: "OK"}, a, "the last good route keeps serving")
	}
	l.agree(t, &n)
}

// agree waits until CSDS agrees with xds.log: every resource xds.log says the client
// ACKed, at the version served now, is ACKED in CSDS at that version, except the NACKed
// type's, which CSDS shows NACKED with grpc-go's reason and the rejected version while
// keeping the version xds.log says it runs.
func (l *lab) agree(t *testing.T, nacked *xdslog.Event) {
	t.Helper()
	var diff []string
	for {
		if diff = l.disagreements(t, nacked); len(diff) == 0 {
			return
		}
		l.waitOrFail(t, "CSDS to agree with xds.log: "+strings.Join(diff, "; "))
	}
}

func (l *lab) disagreements(t *testing.T, nacked *xdslog.Event) []string {
	t.Helper()
	served := l.cp.Publisher().Versions()
	acked := l.acked(t)
	view := l.csds(t)
	var diff []string
	if len(acked) != 4 {
		diff = append(diff, fmt.Sprintf("xds.log: %d resources ACKed, want 4: %v", len(acked), acked))
	}
	for key, version := range acked {
		typ, _, _ := strings.Cut(key, "/")
		isNacked := nacked != nil && typ == nacked.Type
		if want := served[resources.Type(typ)]; !isNacked && version != want {
			diff = append(diff, fmt.Sprintf("xds.log: %s ACKed at %q, served %q", key, version, want))
		}
		g := view[key]
		switch {
		case g == nil:
			diff = append(diff, "CSDS lacks "+key)
		case g.GetVersionInfo() != version:
			diff = append(diff, fmt.Sprintf("%s: CSDS version %q, xds.log %q", key, g.GetVersionInfo(), version))
		case isNacked && (g.GetClientStatus() != adminpb.ClientResourceStatus_NACKED || g.GetErrorState().GetVersionInfo() != nacked.SentVersion ||
			!strings.Contains(g.GetErrorState().GetDetails(), "doesn't have a path specifier")):
			diff = append(diff, fmt.Sprintf("%s: CSDS %s, error state %v; want NACKED of %q", key, g.GetClientStatus(), g.GetErrorState(), nacked.SentVersion))
		case !isNacked && g.GetClientStatus() != adminpb.ClientResourceStatus_ACKED:
			diff = append(diff, fmt.Sprintf("%s: CSDS %s, want ACKED", key, g.GetClientStatus()))
		}
	}
	return diff
}
