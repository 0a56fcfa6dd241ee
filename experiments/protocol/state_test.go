package protocol

import (
	"context"
	"testing"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/delta"
	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/experiments/testenv"
	"github.com/xds-workbench/lab/shared/bufconntest"
	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/shared/xdslog/xdslogtest"
	"github.com/xds-workbench/lab/sotw"
)

// TestOnePublisherFeedsBothTransports: the state is apart from the transport. One cache
// and its one publisher are served by a SotW transport and a delta transport on two gRPC
// servers; each publish reaches a SotW client and a delta client, each transport records
// its own streams, and the publish itself is recorded once, by the publisher.
func TestOnePublisherFeedsBothTransports(t *testing.T) {
	// Wired by hand: the control plane serves one transport, this test two on one cache.
	testenv.VerifyNoLeaks(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sv := variants[0] // SotW, uniform labels: the publisher records into its log
	s := &harness{t: t, v: sv, log: &xdslogtest.Log{}, ctx: ctx}
	s.rec = xdslog.NewRecorder(s.log, sv.mode)
	snapshots := publish.NewSnapshotCache(nil)
	pub, err := publish.NewPublisher(publish.PublisherConfig{Cache: snapshots, Recorder: s.rec, Strategy: sv.versions})
	require.NoError(t, err)
	s.cache, s.pub = snapshots, pub
	s.fe = newTransport(t, ctx, sv, s.cache, s.pub, s.rec)
	s.lis = bufconntest.ServeGRPC(t, s.fe.Register)
	dv := variants[2]
	require.Equal(t, protocol.Delta, dv.mode)
	d := &harness{t: t, v: dv, log: &xdslogtest.Log{}, cache: s.cache, pub: s.pub, ctx: s.ctx}
	d.rec = xdslog.NewRecorder(d.log, dv.mode)
	d.fe = newTransport(t, s.ctx, dv, s.cache, s.pub, d.rec)
	d.lis = bufconntest.ServeGRPC(t, d.fe.Register)
	require.Equal(t, protocol.SotW, s.fe.Mode())
	require.Equal(t, protocol.Delta, d.fe.Mode())

	sc, err := simclient.New(protocol.SotW, "")
	require.NoError(t, err)
	dc, err := simclient.New(protocol.Delta, "")
	require.NoError(t, err)
	defer s.connect(sc)()
	defer d.connect(dc)()

	var prev *resources.Set
	for _, step := range []struct {
		name  string
		state resources.State
	}{
		{"initial", resources.State{Version: "1", InventoryPort: portV1}},
		{"port-change", resources.State{Version: "2", InventoryPort: portV2}},
	} {
		d.rec.SetStep(step.name)
		set := s.publish(step.name, step.state)
		assert.Same(t, set, s.pub.Current())
		s.waitClient(sc, "the SotW client accepts "+step.name, func(st simclient.State) bool { return acceptedHashes(st, set) })
		d.waitClient(dc, "the delta client accepts "+step.name, func(st simclient.State) bool { return acceptedHashes(st, set) })

		// SotW with uniform labels re-sends every type; delta sends what changed.
		wantSends := map[*harness]int{s: len(resources.CoreTypes), d: len(set.ChangedTypes(prev))}
		for _, h := range []*harness{s, d} {
			ev := h.waitLog(h.v.mode.String()+" ACKs of "+step.name, func(ev []xdslog.Event) bool {
				return len(filter(ev, of(step.name, xdslog.EventAck))) >= wantSends[h]
			})
			sends := filter(ev, of(step.name, xdslog.EventSend))
			require.Len(t, sends, wantSends[h], "%s: sends of %s", h.v.mode, step.name)
			for _, e := range sends {
				assert.Equal(t, step.state.Version, e.Version, "%s %s: version_info / system_version_info is the label", h.v.mode, e.Type)
				want := set.ByType[resources.Type(e.Type)]
				require.Len(t, e.Resources, want.Len())
				for i, r := range e.Resources {
					assert.Equal(t, want.At(i).Name, r.Name, "%s %s: named as published", h.v.mode, e.Type)
					assert.Equal(t, want.At(i).Hash, r.Hash, "%s %s: the published content", h.v.mode, e.Type)
				}
			}
		}
		assert.Len(t, filter(s.log.Events(t), of(step.name, xdslog.EventPublish)), 1, "the publish is recorded once, by the publisher")
		assert.Empty(t, filter(d.log.Events(t), of(step.name, xdslog.EventPublish)), "a transport records no publish")
		prev = set
	}
}

// TestTransportsNeedACache: a transport builds no state of its own, so it refuses to
// start without a cache to serve.
func TestTransportsNeedACache(t *testing.T) {
	_, err := sotw.New(context.Background(), sotw.Config{})
	assert.ErrorContains(t, err, "no cache")
	_, err = delta.New(context.Background(), delta.Config{})
	assert.ErrorContains(t, err, "no cache")
	_, err = sotw.New(context.Background(), sotw.Config{Cache: publish.NewSnapshotCache(nil), NackPolicy: "sometimes"})
	assert.ErrorContains(t, err, "unknown NACK policy")
}

// newTransport builds v's transport on cache, naming what it sends with pub.
func newTransport(t *testing.T, ctx context.Context, v variant, cache cachev3.Cache, pub publish.StatePublisher, rec *xdslog.Recorder) frontend.FrontEnd {
	t.Helper()
	var (
		fe  frontend.FrontEnd
		err error
	)
	if v.mode == protocol.SotW {
		fe, err = sotw.New(ctx, sotw.Config{Cache: cache, Recorder: rec, NackPolicy: v.policy, Describe: pub.Describe})
	} else {
		fe, err = delta.New(ctx, delta.Config{Cache: cache, Recorder: rec, Describe: pub.Describe})
	}
	require.NoError(t, err)
	return fe
}
