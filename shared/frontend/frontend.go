// Package frontend holds the two sides of an ADS front end that do not depend on the
// protocol, kept apart as go-control-plane keeps pkg/cache apart from pkg/server.
//
// The state side is the Publisher: it turns a validated resource set into a library
// snapshot with the right per-type versions, records the publish and sets it on a cache
// it reaches through SnapshotSetter (NewSnapshotCache builds the library's). Beside it,
// the LinearPublisher feeds a LinearCache per type behind a MuxCache, handing each type
// only what changed; both are a StatePublisher. Whoever owns the cache builds the one
// publisher: experiments/controlplane for the CLI, a test harness in tests.
//
// The transport side is the FrontEnd interface (an ADS server in one protocol on a
// gRPC server) and what both transports share: the type check, the refusal of the other
// protocol and DescribeFunc, the way a transport names and hashes what it sends. The
// sotw and delta packages implement FrontEnd over any cachev3.Cache; they build no cache
// and no publisher, so one publish can feed any number of transports.
package frontend

import (
	"context"
	"fmt"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
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

// DescribeFunc names and hashes a resource as a transport sends it, for xds.log.
// Publisher.Describe is the one to use when a publisher feeds the cache; DescribeWire
// works without one.
type DescribeFunc func(a *anypb.Any) (name, hash string)

// DescribeWire hashes the bytes sent and names the resource by decoding it.
func DescribeWire(a *anypb.Any) (name, hash string) {
	return decodedName(a), cachev3.HashResource(a.GetValue())
}

// decodedName is a resource's name read from its bytes.
func decodedName(a *anypb.Any) string {
	m, err := a.UnmarshalNew()
	if err != nil {
		return "?undecodable"
	}
	return cachev3.GetResourceName(m)
}

// CheckType maps a request's type URL to its short name. Any other type is refused: the
// stream ends with InvalidArgument and the refusal is recorded.
func CheckType(rec *xdslog.Recorder, stream int64, url string) (resources.Type, error) {
	t, ok := resources.TypeOf(url)
	if !ok {
		msg := fmt.Sprintf("unsupported type URL %q: this workbench serves LDS, RDS, CDS, EDS and VHDS (VirtualHost)", url)
		rec.Emit(xdslog.Event{Event: xdslog.EventRefused, Stream: stream, Error: msg})
		return "", status.Error(codes.InvalidArgument, msg)
	}
	return t, nil
}

// RefuseProtocol records and returns the refusal of a stream in the other protocol; ctx
// is the stream's, for the client's address.
func RefuseProtocol(ctx context.Context, rec *xdslog.Recorder, what, msg string) error {
	rec.Emit(xdslog.Event{Event: xdslog.EventRefused, Peer: PeerAddr(ctx), Error: what + " refused: " + msg})
	return status.Error(codes.Unimplemented, msg)
}

// PeerAddr is the address of the client of a gRPC stream's context ("" when unknown),
// for stream_open and refused events: which Envoy it is.
func PeerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}

// DiscardLogger drops the library's logs; the workbench's evidence is xds.log.
type DiscardLogger struct{}

func (DiscardLogger) Debugf(string, ...any) {}
func (DiscardLogger) Infof(string, ...any)  {}
func (DiscardLogger) Warnf(string, ...any)  {}
func (DiscardLogger) Errorf(string, ...any) {}

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
			// A name without a body: "does not exist" (frontend.OnDemandCache).
			res[i] = xdslog.Resource{Name: r.GetName(), Version: r.GetVersion(), NotFound: true}
			continue
		}
		_, hash := describe(r.GetResource())
		res[i] = xdslog.Resource{Name: r.GetName(), Version: r.GetVersion(), Hash: hash}
	}
	return res
}
