package controlplane

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/experiments/simclient/simclienttest"
	"github.com/xds-workbench/lab/experiments/testenv"
	"github.com/xds-workbench/lab/shared/bufconntest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/shared/xdslog/xdslogtest"
	"github.com/xds-workbench/lab/sotw"
)

// sotwPlane is a SotW control plane served over bufconn with a simulated Envoy on it.
type sotwPlane struct {
	cp     *ControlPlane
	log    *xdslogtest.Log
	client *simclient.Client
}

// serveSotW builds a SotW control plane with o (New, as lab serve does), publishes the
// teaching state as step "initial", serves it over bufconn and runs a simulated Envoy
// until it runs every type.
func serveSotW(t *testing.T, o Options) *sotwPlane {
	t.Helper()
	// First, so that its check runs after every cleanup registered below.
	testenv.VerifyNoLeaks(t)
	p := &sotwPlane{log: &xdslogtest.Log{}}
	o.Mode, o.Recorder = protocol.SotW, xdslog.NewRecorder(p.log, protocol.SotW)
	cp, err := New(o)
	require.NoError(t, err)
	p.cp = cp
	publishStep(t, cp, cp.Recorder(), "initial", resources.State{Version: "1", InventoryPort: 18080})
	lis := bufconntest.Serve(t, cp.Serve, cp.Stop)
	p.client, err = simclient.New(protocol.SotW, "")
	require.NoError(t, err)
	t.Cleanup(simclienttest.Start(context.Background(), p.client, lis.Dial(t)))
	simclienttest.WaitFor(t, p.client, revertWait, "every type of version 1 run", p.runsAll)
	return p
}

// runsAll reports whether the client runs every type the control plane serves now.
func (p *sotwPlane) runsAll(s simclient.State) bool {
	for _, typ := range resources.CoreTypes {
		if !runs(p.cp, s, typ) {
			return false
		}
	}
	return true
}

// TestSotWOptionsTakeEffect: each SotW option combination the control plane accepts
// behaves as its options say. Versions: after a publish that changes only the
// endpoints, per-type versions move EDS's version_info alone (and only EDS is sent),
// uniform ones give every type the new label (and re-send every type). NACK policy,
// after the client NACKs the invalid route: resend re-sends the rejected route at once,
// backoff re-sends it after a delay, hold sends nothing until the next publish, revert
// republishes the route the client accepted before.
func TestSotWOptionsTakeEffect(t *testing.T) {
	for _, tc := range []struct {
		name    string
		o       Options
		perType bool
		policy  sotw.NackPolicy
	}{
		// The snapshot cache's defaults (uniform, resend): the library's behaviour.
		{"snapshot-defaults", Options{}, false, sotw.Resend},
		{"snapshot-per-type-hold", Options{Versions: "per-type", NackPolicy: "hold"}, true, sotw.Hold},
		{"snapshot-uniform-backoff", Options{Versions: "uniform", NackPolicy: "backoff"}, false, sotw.Backoff},
		{"snapshot-per-type-revert", Options{Versions: "per-type", NackPolicy: "revert"}, true, sotw.Revert},
		// The LinearCache versions each type itself: per type without being asked.
		{"linear-hold", Options{Cache: "linear", NackPolicy: "hold"}, true, sotw.Hold},
		{"linear-revert", Options{Cache: "linear", NackPolicy: "revert"}, true, sotw.Revert},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := serveSotW(t, tc.o)
			p.assertVersionsMove(t, tc.perType)
			p.assertAfterNack(t, tc.policy)
		})
	}
}

// assertVersionsMove publishes version 2, which changes only the endpoints, and checks
// which version_info moved and which types were sent.
func (p *sotwPlane) assertVersionsMove(t *testing.T, perType bool) {
	t.Helper()
	before, prev := p.cp.Publisher().Versions(), p.cp.Publisher().Current()
	set := publishStep(t, p.cp, p.cp.Recorder(), "port-change", resources.State{Version: "2", InventoryPort: 18081})
	require.Equal(t, []resources.Type{resources.EDS}, set.ChangedTypes(prev), "only the endpoints change")
	st := simclienttest.WaitFor(t, p.client, revertWait, "version 2 run", p.runsAll)
	after := p.cp.Publisher().Versions()
	sent := []string{"CDS", "EDS", "LDS", "RDS"}
	if perType {
		sent = []string{"EDS"}
		assert.NotEqual(t, before[resources.EDS], after[resources.EDS], "EDS's version moves")
	}
	for _, typ := range resources.CoreTypes {
		assert.Equal(t, after[typ], st.VersionInfo[typ], "%s: the client runs the version served", typ)
		switch {
		case !perType:
			assert.Equal(t, "2", after[typ], "%s: uniform versions are the label", typ)
		case typ != resources.EDS:
			assert.Equal(t, before[typ], after[typ], "%s: an unchanged type keeps its version", typ)
		}
	}
	ev := p.log.WaitFor(t, revertWait, "the ACKs of port-change", func(ev []xdslog.Event) bool {
		return len(xdslogtest.Select(ev, "port-change", xdslog.EventAck, "")) >= len(sent)
	})
	var types []string
	for _, e := range xdslogtest.Select(ev, "port-change", xdslog.EventSend, "") {
		types = append(types, e.Type)
		assert.Equal(t, after[resources.Type(e.Type)], e.Version, "%s: version_info as served", e.Type)
	}
	slices.Sort(types)
	assert.Equal(t, sent, types, "the types sent for a change of the endpoints")
}

// assertAfterNack publishes version 3 with the invalid route, which the client NACKs,
// checks what follows the NACK under policy, and then that a valid version 4 is run.
func (p *sotwPlane) assertAfterNack(t *testing.T, policy sotw.NackPolicy) {
	t.Helper()
	rejected := publishStep(t, p.cp, p.cp.Recorder(), "invalid", resources.State{Version: "3", InventoryPort: 18081, InvalidRoute: true})
	bad := rejected.Hashes(resources.RDS)[resources.RouteName]
	nacked := func(n int) func([]xdslog.Event) bool {
		return func(ev []xdslog.Event) bool {
			return len(xdslogtest.Select(ev, "invalid", xdslog.EventNack, "RDS")) >= n
		}
	}
	switch policy {
	case sotw.Resend, sotw.Backoff:
		// The rejected route again, with no publish in between.
		ev := p.log.WaitFor(t, revertWait, "a second RDS NACK", nacked(2))
		sends, nacks := xdslogtest.Select(ev, "invalid", xdslog.EventSend, "RDS"), xdslogtest.Select(ev, "invalid", xdslog.EventNack, "RDS")
		require.GreaterOrEqual(t, len(sends), 2)
		for _, s := range sends {
			assert.Equal(t, []string{bad}, hashes(s), "the rejected route re-sent")
		}
		assert.Equal(t, 2, nacks[1].Repeat, "the second NACK is of the same content")
		gap := sends[1].TS.Sub(nacks[0].TS)
		if policy == sotw.Backoff {
			assert.GreaterOrEqual(t, gap, sotw.DefaultBackoffBase/2, "backoff waits before it re-sends")
		}
	case sotw.Revert:
		ev := p.log.WaitFor(t, revertWait, "the reverted route's ACK", func(ev []xdslog.Event) bool {
			i := index(ev, func(e xdslog.Event) bool { return e.Event == xdslog.EventPublish && e.Version == "3"+RevertSuffix })
			return i >= 0 && len(xdslogtest.Select(ev[i:], "invalid", xdslog.EventAck, "RDS")) > 0
		})
		reverts := xdslogtest.Select(ev, "invalid", xdslog.EventRevert, "RDS")
		require.Len(t, reverts, 1)
		assert.Equal(t, "3"+RevertSuffix, reverts[0].Version)
		assert.NotEqual(t, bad, p.cp.Publisher().Current().Hashes(resources.RDS)[resources.RouteName], "the accepted route is served again")
	case sotw.Hold:
		p.log.WaitFor(t, revertWait, "the RDS NACK", nacked(1))
	}
	publishStep(t, p.cp, p.cp.Recorder(), "recover", resources.State{Version: "4", InventoryPort: 18081})
	simclienttest.WaitFor(t, p.client, revertWait, "version 4 run", p.runsAll)
	if policy == sotw.Hold || policy == sotw.Revert {
		ev := p.log.Events(t)
		assert.Len(t, xdslogtest.Select(ev, "invalid", xdslog.EventNack, "RDS"), 1, "NACKed once")
		rejectedSends := 0
		for _, s := range xdslogtest.Select(ev, "invalid", xdslog.EventSend, "RDS") {
			if slices.Equal([]string{bad}, hashes(s)) {
				rejectedSends++
			}
		}
		assert.Equal(t, 1, rejectedSends, "the rejected route was sent once, never re-sent")
	}
}

// hashes are the content hashes of a send's resources.
func hashes(e xdslog.Event) []string {
	var out []string
	for _, r := range e.Resources {
		out = append(out, r.Hash)
	}
	return out
}
