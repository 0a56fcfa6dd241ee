package adsfuzz

import (
	"context"
	"strings"
	"sync"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/xds-workbench/lab/shared/resources"
)

// recvWait bounds how long a Recv op waits: a server may rightly never answer (an
// unknown type, a NACK), and the script must go on.
const recvWait = 20 * time.Millisecond

// MaxIdle bounds the idle streams a script opens: the control plane's HTTP/2
// MaxConcurrentStreams (16 by default) would otherwise block the next stream's open
// until the script's context ends, which tests gRPC's flow control, not the front end.
const MaxIdle = 4

// stream is the main stream of a script, either protocol, with its responses read by
// one goroutine so that a Recv op can wait with a deadline.
type stream struct {
	delta  bool
	sotw   discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	dstr   discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
	got    chan struct{}
	ended  chan struct{} // closed when the server ends the stream
	mu     sync.Mutex
	nonce  string // last nonce received
	verson string // last SotW version received
	broken bool   // a send failed: the stream is over
	idle   int    // idle streams opened
}

// Run runs s on conn and returns once every stream it opened has ended on the client
// side. limit is the server's receive limit in bytes (for the *Limit ops). Errors are
// part of the game (a hostile script breaks its own stream), so Run returns none.
func Run(ctx context.Context, conn *grpc.ClientConn, s Script, limit int) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := discovery.NewAggregatedDiscoveryServiceClient(conn)
	st := &stream{delta: s.Delta, got: make(chan struct{}, 64), ended: make(chan struct{})}
	var err error
	if s.Delta {
		st.dstr, err = client.DeltaAggregatedResources(ctx)
	} else {
		st.sotw, err = client.StreamAggregatedResources(ctx)
	}
	if err != nil {
		return
	}
	var readers sync.WaitGroup
	readers.Go(st.read)
	for _, op := range s.Ops {
		st.do(ctx, cancel, client, op, limit, &readers)
	}
	st.finish()
	cancel()
	readers.Wait()
}

// endWait bounds how long a script waits for the server to end its main stream after
// the half-close: long enough for a busy machine, short against a server that keeps a
// half-closed stream open (the fuzz target then cancels it).
const endWait = 2 * time.Second

// finish half-closes the main stream and waits for the server to end it, so that
// every request sent was read before the stream goes.
func (st *stream) finish() {
	if st.delta {
		_ = st.dstr.CloseSend()
	} else {
		_ = st.sotw.CloseSend()
	}
	timer := time.NewTimer(endWait)
	defer timer.Stop()
	select {
	case <-st.ended:
	case <-timer.C:
	}
}

// do runs one op.
func (st *stream) do(ctx context.Context, cancel context.CancelFunc, client discovery.AggregatedDiscoveryServiceClient, op Op, limit int, readers *sync.WaitGroup) {
	switch op.Kind {
	case Send:
		st.send(st.request(op))
	case SendAtLimit:
		st.send(st.sized(op.TypeURL, limit))
	case SendOverLimit:
		st.send(st.sized(op.TypeURL, limit+1))
	case CloseSend:
		if st.delta {
			_ = st.dstr.CloseSend()
		} else {
			_ = st.sotw.CloseSend()
		}
	case Cancel:
		cancel()
	case OpenIdle:
		if st.idle == MaxIdle {
			return
		}
		st.idle++
		readers.Go(func() { idle(ctx, client, st.delta) })
	case Recv:
		timer := time.NewTimer(recvWait)
		defer timer.Stop()
		for range op.N {
			select {
			case <-st.got:
			case <-timer.C:
				return
			}
		}
	}
}

// idle opens a stream of the script's protocol that never sends, and reads until the
// script ends.
func idle(ctx context.Context, client discovery.AggregatedDiscoveryServiceClient, delta bool) {
	var s grpc.ClientStream
	var err error
	var m proto.Message = &discovery.DiscoveryResponse{}
	if delta {
		s, err = client.DeltaAggregatedResources(ctx)
		m = &discovery.DeltaDiscoveryResponse{}
	} else {
		s, err = client.StreamAggregatedResources(ctx)
	}
	for err == nil {
		err = s.RecvMsg(m)
	}
}

// read receives until the stream ends, remembering the last nonce and version.
func (st *stream) read() {
	defer close(st.ended)
	for {
		var nonce, version string
		if st.delta {
			r, err := st.dstr.Recv()
			if err != nil {
				return
			}
			nonce = r.GetNonce()
		} else {
			r, err := st.sotw.Recv()
			if err != nil {
				return
			}
			nonce, version = r.GetNonce(), r.GetVersionInfo()
		}
		st.mu.Lock()
		st.nonce, st.verson = nonce, version
		st.mu.Unlock()
		select {
		case st.got <- struct{}{}:
		default:
		}
	}
}

// choose resolves a nonce or version choice.
func (st *stream) choose(from uint8, table string, last func() string) string {
	switch from {
	case Empty:
		return ""
	case LastReceived:
		st.mu.Lock()
		defer st.mu.Unlock()
		return last()
	}
	return table
}

// request builds the message an op sends, of the stream's protocol.
func (st *stream) request(op Op) proto.Message {
	node := &core.Node{Id: resources.NodeID, Cluster: "fuzz"}
	nonce := st.choose(op.NonceFrom, op.Nonce, func() string { return st.nonce })
	var detail *status.Status
	if op.ErrorDetail {
		detail = &status.Status{Code: 3, Message: "fuzz: rejected"}
	}
	if st.delta {
		var initial map[string]string
		if op.VersionFrom != Empty && len(op.Names) > 0 {
			initial = map[string]string{op.Names[0]: op.Version}
		}
		return &discovery.DeltaDiscoveryRequest{Node: node, TypeUrl: op.TypeURL, ResourceNamesSubscribe: op.Names,
			ResourceNamesUnsubscribe: op.Unsubscribe, InitialResourceVersions: initial, ResponseNonce: nonce, ErrorDetail: detail}
	}
	version := st.choose(op.VersionFrom, op.Version, func() string { return st.verson })
	return &discovery.DiscoveryRequest{Node: node, TypeUrl: op.TypeURL, ResourceNames: op.Names,
		VersionInfo: version, ResponseNonce: nonce, ErrorDetail: detail}
}

// sized builds a request whose encoded size is exactly size bytes, padding one name.
func (st *stream) sized(typeURL string, size int) proto.Message {
	pad := func(n int) proto.Message {
		name := []string{strings.Repeat("p", max(n, 0))}
		if st.delta {
			return &discovery.DeltaDiscoveryRequest{TypeUrl: typeURL, ResourceNamesSubscribe: name}
		}
		return &discovery.DiscoveryRequest{TypeUrl: typeURL, ResourceNames: name}
	}
	n := size
	for range 4 { // the length prefix's own size changes by at most a few bytes
		n += size - proto.Size(pad(n))
	}
	return pad(n)
}

// send sends m on the main stream unless an earlier send failed.
func (st *stream) send(m proto.Message) {
	if st.broken {
		return
	}
	var err error
	if st.delta {
		err = st.dstr.Send(m.(*discovery.DeltaDiscoveryRequest))
	} else {
		err = st.sotw.Send(m.(*discovery.DiscoveryRequest))
	}
	st.broken = err != nil
}
