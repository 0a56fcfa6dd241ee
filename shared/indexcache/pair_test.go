package indexcache_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/stretchr/testify/require"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
)

// pair is one simulated client with a stream to each side, sent the same requests.
type pair struct {
	t     *testing.T
	delta bool
	sides [2]*side
	ends  [2]*end
	// names per type as the client asks for them (SotW: the whole list; "*" for wildcard,
	// nil for a legacy wildcard's empty list).
	names map[string][]string
	asked map[string]bool // types requested on this stream
}

// end is one side's stream and what the client has from it.
type end struct {
	sotw  discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	delta discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
	// version and nonce per type: the last response's.
	version, nonce map[string]string
	// known per type: name -> delta version (hash), for initial_resource_versions.
	known  map[string]map[string]string
	cancel context.CancelFunc
	// pending is the version_info of the SotW response being answered.
	pending string
}

func newPair(t *testing.T, sides [2]*side, delta bool) *pair {
	p := &pair{t: t, delta: delta, sides: sides, names: map[string][]string{}}
	p.open()
	return p
}

func (p *pair) open() {
	p.asked = map[string]bool{}
	for i, s := range p.sides {
		ctx, cancel := context.WithCancel(context.Background())
		p.t.Cleanup(cancel)
		e := &end{version: map[string]string{}, nonce: map[string]string{}, known: map[string]map[string]string{}, cancel: cancel}
		if old := p.ends[i]; old != nil {
			e.version, e.known = old.version, old.known
		}
		c := discovery.NewAggregatedDiscoveryServiceClient(s.conn)
		var err error
		if p.delta {
			e.delta, err = c.DeltaAggregatedResources(ctx)
		} else {
			e.sotw, err = c.StreamAggregatedResources(ctx)
		}
		require.NoError(p.t, err)
		p.ends[i] = e
	}
}

// reconnect ends both streams and opens new ones that ask again for what the client
// had asked for: SotW with the last version_info, delta with initial_resource_versions.
func (p *pair) reconnect() {
	for _, e := range p.ends {
		e.cancel()
	}
	p.open()
	for _, typ := range diffTypes {
		names, ok := p.names[typ]
		if !ok {
			continue
		}
		p.asked[typ] = true
		for _, e := range p.ends {
			if p.delta {
				p.sendDelta(e, &discovery.DeltaDiscoveryRequest{TypeUrl: typ, ResourceNamesSubscribe: names, InitialResourceVersions: e.known[typ]})
			} else {
				p.sendSotW(e, &discovery.DiscoveryRequest{TypeUrl: typ, ResourceNames: names, VersionInfo: e.version[typ]})
			}
		}
	}
}

// request sends one random request of one type to both sides.
func (p *pair) request(rng *rand.Rand) string {
	typ := diffTypes[rng.IntN(len(diffTypes))]
	all := pool(typ)
	pick := func() []string {
		var out []string
		for _, n := range append(all, "*") {
			if rng.IntN(3) == 0 {
				out = append(out, n)
			}
		}
		return out
	}
	first := !p.asked[typ]
	p.asked[typ] = true
	if p.delta {
		sub, unsub := pick(), []string(nil)
		if !first && rng.IntN(2) == 0 {
			sub, unsub = nil, pick()
		}
		if first && rng.IntN(3) == 0 {
			sub = nil // legacy wildcard
		}
		p.names[typ] = applyDelta(p.names[typ], sub, unsub)
		for _, e := range p.ends {
			p.sendDelta(e, &discovery.DeltaDiscoveryRequest{TypeUrl: typ, ResourceNamesSubscribe: sub, ResourceNamesUnsubscribe: unsub, ResponseNonce: e.nonce[typ]})
		}
		return fmt.Sprintf("delta %s +%v -%v", typ, sub, unsub)
	}
	names := pick()
	if first && rng.IntN(3) == 0 {
		names = nil // legacy wildcard
	}
	p.names[typ] = names
	for _, e := range p.ends {
		p.sendSotW(e, &discovery.DiscoveryRequest{TypeUrl: typ, ResourceNames: names, VersionInfo: e.version[typ], ResponseNonce: e.nonce[typ]})
	}
	return fmt.Sprintf("sotw %s %v", typ, names)
}

// applyDelta is the names a delta client asks for after a request, kept to resend on a
// reconnect.
func applyDelta(names, sub, unsub []string) []string {
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	for _, n := range sub {
		set[n] = true
	}
	for _, n := range unsub {
		delete(set, n)
	}
	return slices.Sorted(maps.Keys(set))
}

func (p *pair) sendSotW(e *end, r *discovery.DiscoveryRequest) { require.NoError(p.t, e.sotw.Send(r)) }
func (p *pair) sendDelta(e *end, r *discovery.DeltaDiscoveryRequest) {
	require.NoError(p.t, e.delta.Send(r))
}

// settle collects both sides' responses to everything so far (ACKing or NACKing each
// alike, NACK one in eight) and returns how they differ ("" when they agree).
func (p *pair) settle(rng *rand.Rand) string {
	for {
		var got [2][]string
		nack := map[int]bool{}
		for i, e := range p.ends {
			got[i] = p.round(e, i, rng, nack)
		}
		if !slices.Equal(got[0], got[1]) {
			return fmt.Sprintf("linear sent %v, indexed sent %v", got[0], got[1])
		}
		if len(got[0]) == 0 {
			return ""
		}
	}
}

// round probes e and reads up to the probe's answer, describing and answering each
// response before it; nack decides, by position, which responses are NACKed (the same
// ones on both sides).
func (p *pair) round(e *end, side int, rng *rand.Rand, nack map[int]bool) []string {
	var out []string
	if p.delta {
		p.sendDelta(e, &discovery.DeltaDiscoveryRequest{TypeUrl: probeType, ResponseNonce: e.nonce[probeType]})
	} else {
		p.sendSotW(e, &discovery.DiscoveryRequest{TypeUrl: probeType, ResponseNonce: e.nonce[probeType]})
	}
	for {
		typ, nonce, desc := p.recv(e)
		if typ == probeType {
			e.nonce[probeType] = nonce
			sort.Strings(out)
			return out
		}
		k := len(out)
		if side == 0 {
			nack[k] = rng.IntN(8) == 0
		}
		out = append(out, desc)
		p.answer(e, typ, nonce, nack[k])
	}
}

// recv reads one response and describes it: type, resources by name and content hash
// (with the delta version, the hash in both caches), removals, and for SotW whether
// version_info moved from the previous response of the type.
func (p *pair) recv(e *end) (typ, nonce, desc string) {
	if p.delta {
		r, err := e.delta.Recv()
		require.NoError(p.t, err)
		typ = r.GetTypeUrl()
		if typ == probeType {
			return typ, r.GetNonce(), ""
		}
		if e.known[typ] == nil {
			e.known[typ] = map[string]string{}
		}
		var res []string
		for _, x := range r.GetResources() {
			h := cachev3.HashResource(x.GetResource().GetValue())
			res = append(res, x.GetName()+"#"+h[:8]+"@"+x.GetVersion()[:8])
			e.known[typ][x.GetName()] = x.GetVersion()
		}
		for _, n := range r.GetRemovedResources() {
			delete(e.known[typ], n)
		}
		sort.Strings(res)
		removed := slices.Sorted(slices.Values(r.GetRemovedResources()))
		return typ, r.GetNonce(), fmt.Sprintf("%s %v removed %v", typ, res, removed)
	}
	r, err := e.sotw.Recv()
	require.NoError(p.t, err)
	typ = r.GetTypeUrl()
	if typ == probeType {
		return typ, r.GetNonce(), ""
	}
	var res []string
	for _, x := range r.GetResources() {
		m, err := x.UnmarshalNew()
		require.NoError(p.t, err)
		res = append(res, cachev3.GetResourceName(m)+"#"+cachev3.HashResource(x.GetValue())[:8])
	}
	sort.Strings(res)
	moved := r.GetVersionInfo() != e.version[typ]
	e.pending = r.GetVersionInfo()
	return typ, r.GetNonce(), fmt.Sprintf("%s %v version moved %t", typ, res, moved)
}

// answer ACKs (or NACKs) a response: SotW with the names asked for and the response's
// version (a NACK keeps the previous one), delta with the nonce.
func (p *pair) answer(e *end, typ, nonce string, nack bool) {
	var detail *rpcstatus.Status
	if nack {
		detail = &rpcstatus.Status{Code: 3, Message: "rejected"}
	}
	e.nonce[typ] = nonce
	if p.delta {
		p.sendDelta(e, &discovery.DeltaDiscoveryRequest{TypeUrl: typ, ResponseNonce: nonce, ErrorDetail: detail})
		return
	}
	if !nack {
		e.version[typ] = e.pending
	}
	p.sendSotW(e, &discovery.DiscoveryRequest{TypeUrl: typ, ResourceNames: p.names[typ], VersionInfo: e.version[typ], ResponseNonce: nonce, ErrorDetail: detail})
}
