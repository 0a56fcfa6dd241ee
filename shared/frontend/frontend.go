// Package frontend is the server half of the control plane, kept apart from the state as
// go-control-plane keeps pkg/server apart from pkg/cache: what an ADS transport is and
// what both transports share, whichever protocol they speak. It holds no state; the
// cache half is shared/publish.
//
// FrontEnd is an ADS server in one protocol on a gRPC server; the sotw and delta
// packages implement it over any cachev3.Cache, so one publish can feed any number of
// transports. Record is how both record what crosses them in xds.log: the stream's
// opening and close, each request once its type is checked (another type is refused), each
// response named and hashed by a DescribeFunc, and the refusal of the other protocol.
// The conversions of requests and responses to what the recorder takes (SotWRequest,
// DeltaRequest, SotWSent, DeltaSent) are shared with lab tap, which records a stream it
// only relays.
package frontend

import (
	"context"
	"fmt"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// FrontEnd is an ADS server in one protocol. Everything above it is mode-blind.
type FrontEnd interface {
	// Mode is protocol.SotW or protocol.Delta.
	Mode() protocol.Mode
	// Register adds the ADS service to s. The method of the other protocol is refused
	// with codes.Unimplemented.
	Register(s *grpc.Server)
}

// DescribeFunc names and hashes a resource as a transport sends it, for xds.log. A
// publisher's Describe (publish.StatePublisher) is the one to use when it feeds the
// cache; DescribeWire works without one.
type DescribeFunc func(a *anypb.Any) (name, hash string)

// DescribeWire hashes the bytes sent and names the resource by decoding it.
func DescribeWire(a *anypb.Any) (name, hash string) {
	return resources.NameOnWire(a), cachev3.HashResource(a.GetValue())
}

// Record is how a transport records what crosses it, the same in both protocols. Its
// methods have the signatures of the library's server callbacks (server.CallbackFuncs),
// so a transport can hand them over as they are.
type Record struct {
	rec      *xdslog.Recorder
	describe DescribeFunc
}

// NewRecord records into rec (nil: nothing is recorded, the type check still refuses)
// and names and hashes what is sent with describe (nil: DescribeWire).
func NewRecord(rec *xdslog.Recorder, describe DescribeFunc) Record {
	if describe == nil {
		describe = DescribeWire
	}
	return Record{rec: rec, describe: describe}
}

// Open records a stream's opening with the client's address, from the stream's ctx.
func (r Record) Open(ctx context.Context, id int64, _ string) error {
	r.rec.StreamOpen(id, PeerAddr(ctx))
	return nil
}

// Close records a stream's close.
func (r Record) Close(id int64, _ *core.Node) { r.rec.StreamClose(id) }

// SotW checks a SotW request's type and records the request. As a request callback it
// runs before the library fills in node and type defaults; with ADS the client must name
// the type on every request, so the type URL is checked here. It returns the type and
// the event recorded (the recorder's classification: ACK, NACK, stale...; zero without a
// recorder), or the refusal of another type.
func (r Record) SotW(id int64, req *discovery.DiscoveryRequest) (resources.Type, xdslog.Event, error) {
	typ, err := r.checkType(id, req.GetTypeUrl())
	if err != nil {
		return "", xdslog.Event{}, err
	}
	return typ, r.rec.SotW(id, string(typ), SotWRequest(req)), nil
}

// Delta checks a delta request's type and records the request, or refuses another type
// (as SotW does).
func (r Record) Delta(id int64, req *discovery.DeltaDiscoveryRequest) error {
	typ, err := r.checkType(id, req.GetTypeUrl())
	if err != nil {
		return err
	}
	r.rec.Delta(id, string(typ), DeltaRequest(req))
	return nil
}

// SotWResponse records a SotW response sent on stream id.
func (r Record) SotWResponse(_ context.Context, id int64, _ *discovery.DiscoveryRequest, resp *discovery.DiscoveryResponse) {
	typ, _ := resources.TypeOf(resp.GetTypeUrl())
	r.rec.Send(id, string(typ), resp.GetNonce(), resp.GetVersionInfo(), SotWSent(resp, r.describe), nil, proto.Size(resp))
}

// DeltaResponse records a delta response sent on stream id.
func (r Record) DeltaResponse(id int64, _ *discovery.DeltaDiscoveryRequest, resp *discovery.DeltaDiscoveryResponse) {
	typ, _ := resources.TypeOf(resp.GetTypeUrl())
	r.rec.Send(id, string(typ), resp.GetNonce(), resp.GetSystemVersionInfo(), DeltaSent(resp, r.describe), resp.GetRemovedResources(), proto.Size(resp))
}

// Refuse records and returns the refusal of a stream in the other protocol (what names
// it, msg tells the client what to do); ctx is the stream's, for the client's address.
func (r Record) Refuse(ctx context.Context, what, msg string) error {
	r.rec.Emit(xdslog.Event{Event: xdslog.EventRefused, Peer: PeerAddr(ctx), Error: what + " refused: " + msg})
	return status.Error(codes.Unimplemented, msg)
}

// checkType maps a request's type URL to its short name. Any other type is refused: the
// stream ends with InvalidArgument and the refusal is recorded.
func (r Record) checkType(stream int64, url string) (resources.Type, error) {
	t, ok := resources.TypeOf(url)
	if !ok {
		msg := fmt.Sprintf("unsupported type URL %q: this workbench serves LDS, RDS, CDS, EDS and VHDS (VirtualHost)", url)
		r.rec.Emit(xdslog.Event{Event: xdslog.EventRefused, Stream: stream, Error: msg})
		return "", status.Error(codes.InvalidArgument, msg)
	}
	return t, nil
}

// PeerAddr is the address of the client of a gRPC stream's context ("" when unknown),
// for stream_open and refused events: which Envoy it is.
func PeerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}

// SotWRequest is what the recorder needs of a SotW request (xdslog.Recorder.SotW): the
// one conversion the SotW transport and lab tap share.
func SotWRequest(req *discovery.DiscoveryRequest) xdslog.SotWRequest {
	q := xdslog.SotWRequest{Node: req.GetNode().GetId(), Names: req.GetResourceNames(), VersionInfo: req.GetVersionInfo(), Nonce: req.GetResponseNonce()}
	if req.GetErrorDetail() != nil {
		msg := req.GetErrorDetail().GetMessage()
		q.Error = &msg
	}
	return q
}

// DeltaRequest is what the recorder needs of a delta request (xdslog.Recorder.Delta).
func DeltaRequest(req *discovery.DeltaDiscoveryRequest) xdslog.DeltaRequest {
	q := xdslog.DeltaRequest{Node: req.GetNode().GetId(), Subscribe: req.GetResourceNamesSubscribe(), Unsubscribe: req.GetResourceNamesUnsubscribe(),
		Initial: req.GetInitialResourceVersions(), Nonce: req.GetResponseNonce()}
	if req.GetErrorDetail() != nil {
		msg := req.GetErrorDetail().GetMessage()
		q.Error = &msg
	}
	return q
}

// SotWSent is a SotW response's resources as xds.log records them: named and hashed by
// describe, each with the response's version_info (SotW resources carry no version of
// their own).
func SotWSent(resp *discovery.DiscoveryResponse, describe DescribeFunc) []xdslog.Resource {
	res := make([]xdslog.Resource, len(resp.GetResources()))
	for i, a := range resp.GetResources() {
		name, hash := describe(a)
		res[i] = xdslog.Resource{Name: name, Version: resp.GetVersionInfo(), Hash: hash}
	}
	return res
}

// DeltaSent is a delta response's resources as xds.log records them: the name and
// version on the wire, the content hashed by describe.
func DeltaSent(resp *discovery.DeltaDiscoveryResponse, describe DescribeFunc) []xdslog.Resource {
	res := make([]xdslog.Resource, len(resp.GetResources()))
	for i, r := range resp.GetResources() {
		if r.GetResource() == nil {
			// A name without a body: "does not exist" (publish.OnDemandCache).
			res[i] = xdslog.Resource{Name: r.GetName(), Version: r.GetVersion(), NotFound: true}
			continue
		}
		_, hash := describe(r.GetResource())
		res[i] = xdslog.Resource{Name: r.GetName(), Version: r.GetVersion(), Hash: hash}
	}
	return res
}
