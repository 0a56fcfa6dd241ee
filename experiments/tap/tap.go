// Package tap is a transparent ADS proxy that records what it forwards. Envoy's
// bootstrap points at the tap instead of its control plane; for each downstream stream
// (SotW StreamAggregatedResources or delta DeltaAggregatedResources, as the client asks)
// the tap opens one upstream stream of the same method and forwards every message both
// ways as the exact bytes received: a raw codec hands the tap the wire bytes, which it
// sends on unchanged, and a copy is decoded only to be recorded.
//
// Recording goes through the same xdslog.Recorder calls the sotw and delta transports
// make (Recorder.SotW, Recorder.Delta, Recorder.Send, with the conversions of
// shared/frontend), so requests are classified (ACK, NACK, stale, unmatched, subscribe,
// ...) by the one accumulator, and per-resource content hashes are computed from the
// bytes as the workbench's own logs compute them: redundancy means the same in both.
//
// Recording is off the forwarding path: the goroutines that forward never decode, hash
// or write. Each frame is put on its recorder's queue (one per mode, shared by that
// mode's streams, drained in order by one recording goroutine) and then forwarded at
// once. So the log's order is the order the tap saw the frames: a response is queued
// before it is delivered, and the ACK answering it can only arrive, and be queued, after
// it, so an answer can never be recorded ahead of what it answers. Every item carries
// the time the tap saw it, and the recorder is given that time as its clock (SetClock)
// for the call, so timestamps and ACK latencies are the observation times, not the
// recording times. The queue is bounded (queueCap); see there for what happens when
// recording falls behind.
//
// What the tap cannot see is the upstream's state: a tap log has no publish events, and
// its session line says so (Source "tap", NoPublish). A message it cannot decode, or of a
// type the workbench does not model, is forwarded unchanged and recorded as an
// "undecodable" event; recording never stops forwarding.
//
// When the upstream ends a stream, the tap ends the matching downstream stream with the
// upstream's status, so the client reconnects and backs off as it would with the real
// server; the next downstream stream gets a new upstream stream and a new stream ID.
//
// Run is `lab tap` (run.go): the tap on a loopback listener, recording into an xds.log
// (the other protocol's streams beside it), with steps named on stdin or every window.
package tap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// The ADS methods the tap serves.
const (
	serviceName = "envoy.service.discovery.v3.AggregatedDiscoveryService"
	// SotWMethod and DeltaMethod are the full gRPC method names forwarded.
	SotWMethod  = "/" + serviceName + "/StreamAggregatedResources"
	DeltaMethod = "/" + serviceName + "/DeltaAggregatedResources"
)

// Config configures a Tap.
type Config struct {
	// Upstream is the control plane's address, 127.0.0.1:PORT (required; any other host
	// is refused unless Dialer is set, which tests use for in-memory connections).
	Upstream string
	// Dialer, when set, makes the upstream connections (bufconn in tests).
	Dialer func(ctx context.Context, addr string) (net.Conn, error)
	// Recorder returns the recorder for a protocol (protocol.SotW or protocol.Delta). It is
	// called once per mode, at the first stream of that mode, so a log holds one mode as
	// lab compare wants; nil: nothing is recorded.
	Recorder func(mode protocol.Mode) *xdslog.Recorder
	// recordHook, when set (tests), is called by the recording goroutine before each
	// item: a slow recorder.
	recordHook func()
	// MaxRecvMsgSize bounds requests (client to server) and MaxSendMsgSize responses, in
	// bytes, both ways through the tap; zero: lab serve's defaults
	// (controlplane.DefaultMaxRecvMsgSize, DefaultMaxSendMsgSize).
	MaxRecvMsgSize, MaxSendMsgSize int
}

// Tap is a running proxy: a gRPC server to register on a listener (Serve) and one
// client connection to the upstream.
type Tap struct {
	cfg      Config
	conn     *grpc.ClientConn
	srv      *grpc.Server
	ids      atomic.Int64
	stopping atomic.Bool

	mu      sync.Mutex
	recs    map[protocol.Mode]*recq // nil for a mode recorded nowhere
	step    string
	stopped bool // under mu: no new stream, step or recorder

	// active counts the proxies and their downstream readers, the producers of queue
	// items; Stop waits for them before it closes the queues.
	active  sync.WaitGroup
	drained sync.Once
}

// queueCap is how many items (frames, stream opens and closes, steps) a recorder's
// queue holds. When recording falls that far behind, the forwarder blocks on the queue
// (backpressure) until the recording goroutine catches up: forwarding slows down rather
// than the log losing a frame. A "lost" marker instead would leave the log's model
// without the sends and requests it missed, and every ACK after it unmatched or
// misclassified, which is not a log worth having; and in the workbench's runs a change
// is a few frames, far below the cap (the SotW recording of a 10,000-resource response
// takes tens of milliseconds). A full queue holds at most queueCap frames, each bounded
// by the message size limits, in memory.
const queueCap = 1024

// itemKind is what a queue item asks the recorder to record.
type itemKind int

const (
	itemOpen itemKind = iota
	itemRequest
	itemResponse
	itemClose
	itemStep
)

// item is one thing the tap saw, at the time it saw it.
type item struct {
	kind itemKind
	at   time.Time
	s    *stream
	f    frame
	// text is the peer (itemOpen), why the stream ended (itemClose) or the step.
	text string
	// done, when set, is closed once the item is recorded (SetStep waits for it).
	done chan struct{}
}

// recq is a recorder's queue and its recording goroutine, the recorder's only caller.
type recq struct {
	rec  *xdslog.Recorder
	ch   chan item
	done chan struct{}
	hook func()
}

func newRecq(rec *xdslog.Recorder, hook func()) *recq {
	return &recq{rec: rec, ch: make(chan item, queueCap), done: make(chan struct{}), hook: hook}
}

// put queues it (blocking while the queue is full); a nil queue records nothing.
func (q *recq) put(it item) {
	if q != nil {
		q.ch <- it
	}
}

// run records the queue's items in order until it is closed, each with the recorder's
// clock set to when the tap saw it.
func (q *recq) run() {
	defer close(q.done)
	defer q.rec.SetClock(nil)
	for it := range q.ch {
		if q.hook != nil {
			q.hook()
		}
		at := it.at
		q.rec.SetClock(func() time.Time { return at })
		switch it.kind {
		case itemOpen:
			q.rec.StreamOpen(it.s.id, it.text)
		case itemRequest:
			it.s.request(it.f)
		case itemResponse:
			it.s.response(it.f)
		case itemClose:
			it.s.close(it.text)
		case itemStep:
			q.rec.SetStep(it.text)
			q.rec.Emit(xdslog.Event{Event: xdslog.EventStep})
		}
		if it.done != nil {
			close(it.done)
		}
	}
}

// New validates cfg and prepares the upstream connection (gRPC dials lazily: a down
// upstream fails each stream with Unavailable, which the client sees as from the server).
func New(cfg Config) (*Tap, error) {
	if cfg.Upstream == "" {
		return nil, errors.New("tap: no upstream address")
	}
	if cfg.Dialer == nil {
		if _, _, err := loopback.ParseAddr(cfg.Upstream); err != nil {
			return nil, fmt.Errorf("tap: upstream: %w", err)
		}
	}
	if cfg.MaxRecvMsgSize < 0 || cfg.MaxSendMsgSize < 0 {
		return nil, fmt.Errorf("tap: negative message size limit (recv %d, send %d)", cfg.MaxRecvMsgSize, cfg.MaxSendMsgSize)
	}
	if cfg.MaxRecvMsgSize == 0 {
		cfg.MaxRecvMsgSize = controlplane.DefaultMaxRecvMsgSize
	}
	if cfg.MaxSendMsgSize == 0 {
		cfg.MaxSendMsgSize = controlplane.DefaultMaxSendMsgSize
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// Requests go up (the client's size limit), responses come down (the server's).
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{}),
			grpc.MaxCallSendMsgSize(cfg.MaxRecvMsgSize), grpc.MaxCallRecvMsgSize(cfg.MaxSendMsgSize)),
	}
	target := cfg.Upstream
	if cfg.Dialer != nil {
		opts = append(opts, grpc.WithContextDialer(cfg.Dialer))
		target = "passthrough:///" + cfg.Upstream
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, fmt.Errorf("tap: upstream %s: %w", cfg.Upstream, err)
	}
	t := &Tap{cfg: cfg, conn: conn, recs: map[protocol.Mode]*recq{}}
	t.srv = grpc.NewServer(grpc.ForceServerCodec(rawCodec{}),
		grpc.MaxRecvMsgSize(cfg.MaxRecvMsgSize), grpc.MaxSendMsgSize(cfg.MaxSendMsgSize))
	t.srv.RegisterService(&grpc.ServiceDesc{
		ServiceName: serviceName,
		HandlerType: (*any)(nil),
		Streams: []grpc.StreamDesc{
			{StreamName: "StreamAggregatedResources", Handler: t.handler(protocol.SotW), ServerStreams: true, ClientStreams: true},
			{StreamName: "DeltaAggregatedResources", Handler: t.handler(protocol.Delta), ServerStreams: true, ClientStreams: true},
		},
	}, t)
	return t, nil
}

// Serve serves downstream clients on lis until Stop.
func (t *Tap) Serve(lis net.Listener) error { return t.srv.Serve(lis) }

// Stop ends every stream (the clients see Unavailable, as from a server going away) and
// closes the upstream connection, then drains the recording queues: everything the tap
// saw, each stream's stream_close included, is written before Stop returns.
func (t *Tap) Stop() {
	t.mu.Lock()
	t.stopped = true
	t.mu.Unlock()
	t.stopping.Store(true)
	t.srv.Stop()
	_ = t.conn.Close()
	t.drained.Do(func() {
		// No producer is left once active is zero (none starts after stopped is set).
		t.active.Wait()
		t.mu.Lock()
		qs := make([]*recq, 0, len(t.recs))
		for _, q := range t.recs {
			if q != nil {
				qs = append(qs, q)
			}
		}
		t.mu.Unlock()
		for _, q := range qs {
			close(q.ch)
			<-q.done
		}
	})
}

// SetStep labels every following line of every recorder with step and writes a step
// event (a recorder made later starts in the current step).
// The step goes through the recording queues, in order with the frames, and SetStep
// returns once every step event is written; a step after Stop is ignored.
func (t *Tap) SetStep(step string) {
	var dones []chan struct{}
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return
	}
	t.step = step
	now := time.Now()
	for _, q := range t.recs {
		if q != nil {
			d := make(chan struct{})
			q.put(item{kind: itemStep, at: now, text: step, done: d})
			dones = append(dones, d)
		}
	}
	t.mu.Unlock()
	for _, d := range dones {
		<-d
	}
}

// begin admits a new stream of mode: its recording queue (made, with its recorder, at
// the mode's first stream; nil when nothing is recorded) and whether the tap is still
// running. An admitted stream is counted in active until the caller's Done.
func (t *Tap) begin(mode protocol.Mode) (*recq, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return nil, false
	}
	t.active.Add(1)
	if q, ok := t.recs[mode]; ok {
		return q, true
	}
	var q *recq
	if t.cfg.Recorder != nil {
		if r := t.cfg.Recorder(mode); r != nil {
			q = newRecq(r, t.cfg.recordHook)
			if t.step != "" {
				q.put(item{kind: itemStep, at: time.Now(), text: t.step})
			}
			go q.run()
		}
	}
	t.recs[mode] = q
	return q, true
}

func (t *Tap) handler(mode protocol.Mode) grpc.StreamHandler {
	method := SotWMethod
	if mode == protocol.Delta {
		method = DeltaMethod
	}
	return func(_ any, down grpc.ServerStream) error {
		return t.proxy(down, mode, method)
	}
}

// stream is one proxied stream's recording side: the recorder and whether the stream
// has been closed in the log (a late request is then not recorded). Only the recording
// goroutine uses rec and closed.
type stream struct {
	id     int64
	mode   protocol.Mode
	rec    *xdslog.Recorder
	closed bool
}

// proxy forwards one downstream stream to a new upstream stream of the same method.
// Each frame is queued for recording and then forwarded; this goroutine and the
// downstream reader never call the recorder.
func (t *Tap) proxy(down grpc.ServerStream, mode protocol.Mode, method string) error {
	q, ok := t.begin(mode)
	if !ok {
		return status.Error(codes.Unavailable, "tap stopping")
	}
	defer t.active.Done()
	ctx, cancel := context.WithCancel(down.Context())
	defer cancel()
	s := &stream{id: t.ids.Add(1), mode: mode}
	if q != nil {
		s.rec = q.rec
	}
	q.put(item{kind: itemOpen, at: time.Now(), s: s, text: frontend.PeerAddr(down.Context())})
	why := ""
	defer func() {
		if t.stopping.Load() {
			why = "tap stopped"
		}
		q.put(item{kind: itemClose, at: time.Now(), s: s, text: why})
	}()

	up, err := t.conn.NewStream(outgoing(ctx), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
	if err != nil {
		why = "upstream stream not opened: " + statusText(err)
		return upstreamStatus(err)
	}
	// Downstream to upstream on a goroutine of its own; it is the only sender upstream.
	// Its end (client's half-close or error) is reported on upDone.
	upDone := make(chan error, 1)
	t.active.Add(1) // while this stream's count is held: the reader may outlive proxy
	go func() {
		defer t.active.Done()
		for {
			var f frame
			if err := down.RecvMsg(&f); err != nil {
				if errors.Is(err, io.EOF) {
					_ = up.CloseSend()
					upDone <- nil
				} else {
					upDone <- err
				}
				return
			}
			q.put(item{kind: itemRequest, at: time.Now(), s: s, f: f})
			if err := up.SendMsg(&f); err != nil {
				// The upstream ended; its status arrives on RecvMsg below.
				upDone <- nil
				return
			}
		}
	}()
	for {
		var f frame
		if err := up.RecvMsg(&f); err != nil {
			select {
			case derr := <-upDone:
				if derr != nil {
					why = "client ended the stream: " + statusText(derr)
					return derr
				}
			default:
			}
			if errors.Is(err, io.EOF) {
				why = "upstream ended the stream: OK"
				return nil
			}
			if ctx.Err() != nil && down.Context().Err() != nil {
				why = "downstream stream ended: " + statusText(down.Context().Err())
				return status.FromContextError(down.Context().Err()).Err()
			}
			why = "upstream ended the stream: " + statusText(err)
			return upstreamStatus(err)
		}
		q.put(item{kind: itemResponse, at: time.Now(), s: s, f: f})
		if err := down.SendMsg(&f); err != nil {
			why = "client ended the stream: " + statusText(err)
			return err
		}
	}
}

// outgoing carries the client's metadata to the upstream, less what gRPC sets itself.
func outgoing(ctx context.Context) context.Context {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return ctx
	}
	md = md.Copy()
	for _, k := range []string{":authority", "content-type", "user-agent", "grpc-accept-encoding", "grpc-encoding", "grpc-timeout", "te"} {
		delete(md, k)
	}
	return metadata.NewOutgoingContext(ctx, md)
}

// upstreamStatus is the status to end the downstream stream with: the upstream's own.
func upstreamStatus(err error) error {
	if st, ok := status.FromError(err); ok {
		return st.Err()
	}
	return status.Error(codes.Unavailable, err.Error())
}

func statusText(err error) string {
	st := status.Convert(err)
	if st.Message() == "" {
		return st.Code().String()
	}
	return st.Code().String() + ": " + st.Message()
}

func (s *stream) close(why string) {
	if s.closed {
		return
	}
	s.closed = true
	s.rec.StreamCloseStatus(s.id, why)
}

// request records one downstream message as the sotw and delta transports do.
func (s *stream) request(f frame) {
	if s.closed || s.rec == nil {
		return
	}
	if s.mode == protocol.SotW {
		var req discovery.DiscoveryRequest
		if err := proto.Unmarshal(f.data, &req); err != nil {
			s.undecodable(xdslog.KindRequest, "not a DiscoveryRequest: "+err.Error(), len(f.data))
			return
		}
		if typ, ok := s.known(xdslog.KindRequest, req.GetTypeUrl(), len(f.data)); ok {
			s.rec.SotW(s.id, typ, frontend.SotWRequest(&req))
		}
		return
	}
	var req discovery.DeltaDiscoveryRequest
	if err := proto.Unmarshal(f.data, &req); err != nil {
		s.undecodable(xdslog.KindRequest, "not a DeltaDiscoveryRequest: "+err.Error(), len(f.data))
		return
	}
	if typ, ok := s.known(xdslog.KindRequest, req.GetTypeUrl(), len(f.data)); ok {
		s.rec.Delta(s.id, typ, frontend.DeltaRequest(&req))
	}
}

// response records one upstream message as the sotw and delta transports do: resources
// named and hashed from their bytes (frontend.DescribeWire), the size on the wire.
func (s *stream) response(f frame) {
	if s.closed || s.rec == nil {
		return
	}
	if s.mode == protocol.SotW {
		var resp discovery.DiscoveryResponse
		if err := proto.Unmarshal(f.data, &resp); err != nil {
			s.undecodable(xdslog.KindResponse, "not a DiscoveryResponse: "+err.Error(), len(f.data))
			return
		}
		if typ, ok := s.known(xdslog.KindResponse, resp.GetTypeUrl(), len(f.data)); ok {
			s.rec.Send(s.id, typ, resp.GetNonce(), resp.GetVersionInfo(), frontend.SotWSent(&resp, frontend.DescribeWire), nil, len(f.data))
		}
		return
	}
	var resp discovery.DeltaDiscoveryResponse
	if err := proto.Unmarshal(f.data, &resp); err != nil {
		s.undecodable(xdslog.KindResponse, "not a DeltaDiscoveryResponse: "+err.Error(), len(f.data))
		return
	}
	if typ, ok := s.known(xdslog.KindResponse, resp.GetTypeUrl(), len(f.data)); ok {
		s.rec.Send(s.id, typ, resp.GetNonce(), resp.GetSystemVersionInfo(), frontend.DeltaSent(&resp, frontend.DescribeWire), resp.GetRemovedResources(), len(f.data))
	}
}

// known maps a type URL to the workbench's short type name; another type (Envoy may ask
// for secrets over ADS) is forwarded but recorded as undecodable.
func (s *stream) known(kind, url string, size int) (string, bool) {
	typ, ok := resources.TypeOf(url)
	if !ok {
		s.undecodable(kind, fmt.Sprintf("type URL %q is not one the workbench models (%s)", url, strings.Join(xdslog.Types, ", ")), size)
		return "", false
	}
	return string(typ), true
}

func (s *stream) undecodable(kind, why string, size int) {
	s.rec.Emit(xdslog.Event{Event: xdslog.EventUndecodable, Stream: s.id, Kind: kind, Error: why, Bytes: size})
}

// frame is one message as bytes on the wire.
type frame struct{ data []byte }

// rawCodec passes frames through: the tap forwards exactly what it received.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("tap: raw codec cannot marshal %T", v)
	}
	return f.data, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("tap: raw codec cannot unmarshal into %T", v)
	}
	// gRPC may reuse data's buffer after Unmarshal returns.
	f.data = append([]byte(nil), data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }
