package protocol

import (
	"context"
	"fmt"
	"strings"
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// newControlPlaneHarness is the harness on a real control plane (gRPC on 127.0.0.1:0
// with the default limits), so the limits and refusals `lab serve` and `lab run` have are
// the ones under test.
func newControlPlaneHarness(t *testing.T, v variant) *harness {
	t.Helper()
	h, _ := startControlPlaneHarness(t, v, nil)
	return h
}

// startControlPlaneHarness is newControlPlaneHarness serving a state per node of nodes
// (Options.Nodes; none: the one default node); it returns the control plane too.
func startControlPlaneHarness(t *testing.T, v variant, nodes []string) (*harness, *controlplane.ControlPlane) {
	t.Helper()
	h, cancel := recordingHarness(t, v)
	cp, err := controlplane.Start(h.ctx, controlplane.Options{Mode: v.mode, Addr: "127.0.0.1:0", Recorder: h.rec,
		Versions: v.versions, NackPolicy: v.policy, Cache: v.cache, Nodes: nodes})
	require.NoError(t, err)
	h.fe, h.pub, h.addr = cp.FrontEnd(), cp.Publisher(), cp.Addr()
	t.Cleanup(func() {
		cancel()
		cp.Stop()
	})
	return h, cp
}

// rawStep starts step and opens a raw stream in it, which ends with t or after wait.
func (h *harness) rawStep(t *testing.T, step string) *garbageStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	h.rec.SetStep(step)
	return h.rawStream(ctx)
}

// garbageStream is one raw ADS stream of either protocol.
type garbageStream struct {
	mode  protocol.Mode
	sotw  discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	delta discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
}

func (h *harness) rawStream(ctx context.Context) *garbageStream {
	h.t.Helper()
	ads := discovery.NewAggregatedDiscoveryServiceClient(h.dial())
	g := &garbageStream{mode: h.v.mode}
	var err error
	if h.v.mode == protocol.SotW {
		g.sotw, err = ads.StreamAggregatedResources(ctx)
	} else {
		g.delta, err = ads.DeltaAggregatedResources(ctx)
	}
	require.NoError(h.t, err)
	return g
}

// send sends a request for typeURL: names (SotW resource_names, delta subscribe), the
// response nonce and, in SotW, version_info.
func (g *garbageStream) send(typeURL string, names []string, nonce, version string) error {
	if g.sotw != nil {
		return g.sotw.Send(&discovery.DiscoveryRequest{Node: nodeProto(), TypeUrl: typeURL, ResourceNames: names, ResponseNonce: nonce, VersionInfo: version})
	}
	return g.delta.Send(&discovery.DeltaDiscoveryRequest{Node: nodeProto(), TypeUrl: typeURL, ResourceNamesSubscribe: names, ResponseNonce: nonce})
}

// recv returns the next response's nonce and resource count, or the stream's error.
func (g *garbageStream) recv() (nonce, version string, n int, err error) {
	if g.sotw != nil {
		r, err := g.sotw.Recv()
		return r.GetNonce(), r.GetVersionInfo(), len(r.GetResources()), err
	}
	r, err := g.delta.Recv()
	return r.GetNonce(), r.GetSystemVersionInfo(), len(r.GetResources()), err
}

// stillServes publishes a new state and waits for the well-behaved client to accept it:
// the control plane keeps serving the other streams.
func stillServes(h *harness, c *simclient.Client, version string, port int) {
	h.t.Helper()
	set := h.publish("after-"+version, resources.State{Version: version, InventoryPort: port})
	h.waitClient(c, "the good stream accepts "+version, func(s simclient.State) bool { return acceptedHashes(s, set) })
}

// names returns n distinct resource names of about width bytes.
func names(n, width int) []string {
	out := make([]string, n)
	for i := range out {
		s := fmt.Sprintf("garbage-%d-", i)
		out[i] = s + strings.Repeat("x", max(0, width-len(s)))
	}
	return out
}

// TestGarbageOnTheStream: a client that sends garbage on its ADS stream (an unknown type
// URL, a response nonce from the future, a name list over the request size limit, a
// large but legal name list) gets an answer or a clear status on that stream; the event
// is in xds.log; and the control plane keeps serving a well-behaved client on another
// stream throughout.
func TestGarbageOnTheStream(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			h := newControlPlaneHarness(t, v)
			h.publish("garbage", resources.State{Version: "1", InventoryPort: portV1})
			good, err := simclient.New(v.mode, "")
			require.NoError(t, err)
			stop := h.connect(good)
			defer stop()
			h.waitClient(good, "the good client's initial state", func(s simclient.State) bool { return s.VersionInfo[resources.EDS] == h.pub.Versions()[resources.EDS] })

			t.Run("unknown type URL", func(t *testing.T) {
				const url = "type.googleapis.com/envoy.service.runtime.v3.Runtime" // RTDS: not modelled
				g := h.rawStep(t, "unknown-type")
				require.NoError(t, g.send(url, nil, "", ""))
				_, _, _, err := g.recv()
				require.Error(t, err)
				assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
				assert.Contains(t, status.Convert(err).Message(), `unsupported type URL "`+url+`"`)
				ev := h.waitLog("refused", func(ev []xdslog.Event) bool {
					return len(filter(ev, func(e xdslog.Event) bool { return e.Event == xdslog.EventRefused && strings.Contains(e.Error, url) })) == 1
				})
				ref := filter(ev, of("unknown-type", xdslog.EventRefused))
				require.Len(t, ref, 1)
				h.waitLog("its stream closed", func(ev []xdslog.Event) bool {
					return len(filter(ev, func(e xdslog.Event) bool { return e.Event == xdslog.EventStreamClose && e.Stream == ref[0].Stream })) == 1
				})
				stillServes(h, good, "2", portV2)
			})

			t.Run("nonce from the future", func(t *testing.T) {
				g := h.rawStep(t, "future-nonce")
				require.NoError(t, g.send(resources.LDS.URL(), nil, "", ""))
				nonce, version, n, err := g.recv()
				require.NoError(t, err)
				require.Equal(t, 1, n)
				require.NoError(t, g.send(resources.LDS.URL(), nil, "999999", version), "feedback naming a nonce never sent")
				require.NoError(t, g.send(resources.LDS.URL(), nil, nonce, version), "then a real ACK on the same stream")
				ev := h.waitLog("the real ACK", func(ev []xdslog.Event) bool {
					return len(filter(ev, func(e xdslog.Event) bool {
						return e.Event == xdslog.EventAck && e.Nonce == nonce && e.Type == "LDS" && e.Step == "future-nonce"
					})) >= 1
				})
				un := filter(ev, of("future-nonce", xdslog.EventUnmatched))
				require.Len(t, un, 1, "recorded as unmatched, never guessed to be an ACK")
				assert.Equal(t, "LDS", un[0].Type)
				assert.Empty(t, filter(ev, func(e xdslog.Event) bool {
					return (e.Event == xdslog.EventAck || e.Event == xdslog.EventNack) && e.Nonce == "999999"
				}))
				// The stream is still open: it answers a new subscription.
				require.NoError(t, g.send(resources.CDS.URL(), nil, "", ""))
				_, _, n, err = g.recv()
				require.NoError(t, err, "the stream still serves after the bogus nonce")
				assert.Equal(t, 1, n)
				stillServes(h, good, "3", portV1)
			})

			t.Run("name list over the size limit", func(t *testing.T) {
				g := h.rawStep(t, "over-limit")
				huge := names(90_000, 60) // about 5.5 MB, over the 4 MiB request limit
				require.NoError(t, g.send(resources.EDS.URL(), huge, "", ""))
				_, _, _, err := g.recv()
				require.Error(t, err)
				assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
				h.waitLog("refused for its size", func(ev []xdslog.Event) bool {
					ref := filter(ev, of("over-limit", xdslog.EventRefused))
					return len(ref) == 1 && strings.Contains(ref[0].Error, "--max-recv-msg-bytes")
				})
				stillServes(h, good, "4", portV2)
			})

			t.Run("large legal name list", func(t *testing.T) {
				g := h.rawStep(t, "large-list")
				list := append(names(20_000, 40), resources.ClusterName) // about 1 MB
				require.NoError(t, g.send(resources.EDS.URL(), list, "", ""))
				_, version, n, err := g.recv()
				require.NoError(t, err, "answered: the one name that exists")
				assert.Equal(t, 1, n)
				assert.Equal(t, h.pub.Versions()[resources.EDS], version, "EDS moved at every publish: label 4, or the LinearCache's own version")
				h.waitLog("the subscription", func(ev []xdslog.Event) bool {
					req := filter(ev, ofType("large-list", xdslog.EventRequest, "EDS"))
					return len(req) == 1 && len(req[0].Names) == len(list)
				})
				stillServes(h, good, "5", portV1)
			})
		})
	}
}
