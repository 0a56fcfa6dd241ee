package inventory

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The gRPC face of a backend, for a proxyless gRPC client routed by the same route table
// as Envoy: any method under /quote (the method path is the route path, e.g. /quote/0)
// answers one unary call. The request is a StringValue holding the HTTP query string
// ("sku=paper"); the answer is a BytesValue holding the same JSON Quote the HTTP path
// writes. The request ID travels as metadata x-request-id, and the call is logged by it
// exactly as an HTTP request is, so a backend's log names who answered either client.

// MetadataRequestID is the metadata key of the request ID (x-request-id over HTTP).
const MetadataRequestID = "x-request-id"

// GRPCMethod is the HTTP method every gRPC call arrives with (gRPC over HTTP/2).
const GRPCMethod = http.MethodPost

// isGRPC reports whether r is a gRPC call: HTTP/2 with a gRPC content type, the test
// grpc.Server.ServeHTTP's documentation gives for sharing a port with an http.Handler.
func isGRPC(r *http.Request) bool {
	return r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc")
}

// sentPathKey carries the path a call was sent with past the rewrite in serveGRPC.
type sentPathKey struct{}

func (b *Backend) newGRPCServer() *grpc.Server {
	return grpc.NewServer(grpc.UnknownServiceHandler(b.handleRPC))
}

// serveGRPC hands a gRPC call to the backend's grpc.Server through ServeHTTP, the bridge
// that lets one net/http server (h2c here) carry gRPC beside HTTP. grpc-go documents it
// as EXPERIMENTAL and as Go's own HTTP/2 server, not grpc-go's (server.go, ServeHTTP).
func (b *Backend) serveGRPC(w http.ResponseWriter, r *http.Request) {
	if b.bh.ConnectionClose {
		// As on the HTTP path: net/http's HTTP/2 server answers it with GOAWAY.
		w.Header().Set("Connection", "close")
	}
	sent := r.URL.Path
	r = r.WithContext(context.WithValue(r.Context(), sentPathKey{}, sent))
	if strings.Count(sent, "/") < 2 {
		// grpc.Server wants "/service/method" and refuses a one-segment path ("malformed
		// method name", server.go handleStream) before any handler runs, but the
		// teaching route is the exact path /quote. Present it as /quote/ (service
		// "quote", an unknown empty method, which the unknown-service handler takes);
		// the log keeps the path as sent.
		u := *r.URL
		u.Path += "/"
		r.URL = &u
	}
	b.grpc.ServeHTTP(w, r)
}

// handleRPC answers any method: the unknown-service handler of the backend's server.
func (b *Backend) handleRPC(_ any, stream grpc.ServerStream) error {
	b.count.Add(1)
	ctx := stream.Context()
	path, _ := ctx.Value(sentPathKey{}).(string)
	id := ""
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(MetadataRequestID); len(v) > 0 {
			id = v[0]
		}
	}
	line := LogLine{Backend: b.name, Method: GRPCMethod, Path: path, RequestID: id, Proto: "HTTP/2.0"}
	in := &wrapperspb.StringValue{}
	if err := stream.RecvMsg(in); err != nil {
		return b.logRPC(line, status.Errorf(codes.InvalidArgument, "inventory %s: read request: %v", b.name, err))
	}
	q, err := url.ParseQuery(in.GetValue())
	if err != nil {
		return b.logRPC(line, status.Errorf(codes.InvalidArgument, "inventory %s: request %q is not a query string: %v", b.name, in.GetValue(), err))
	}
	line.SKU = q.Get("sku")
	if id != "" {
		_ = stream.SetHeader(metadata.Pairs(MetadataRequestID, id))
	}
	b.hold(ctx)
	if path != QuotePath && !strings.HasPrefix(path, QuotePath+"/") {
		return b.logRPC(line, status.Errorf(codes.NotFound, "inventory %s: not found: %s", b.name, path))
	}
	body, err := json.Marshal(Quote{Backend: b.name, SKU: line.SKU, RequestID: id, Port: b.port})
	if err != nil {
		return b.logRPC(line, status.Errorf(codes.Internal, "inventory %s: encode quote: %v", b.name, err))
	}
	if err := stream.SendMsg(&wrapperspb.BytesValue{Value: append(body, '\n')}); err != nil {
		return b.logRPC(line, err)
	}
	return b.logRPC(line, nil)
}

// logRPC logs a call with the HTTP status its gRPC code stands for and returns err.
func (b *Backend) logRPC(l LogLine, err error) error {
	code := status.Code(err)
	l.TS, l.Status, l.GRPCStatus = time.Now().UTC(), HTTPStatus(code), code.String()
	b.writeLog(l)
	return err
}

// hold waits the backend's Delay, or until the caller gives up (the call is answered and
// logged all the same, as on the HTTP path).
func (b *Backend) hold(ctx context.Context) { b.holdFor(ctx, b.bh.Delay) }

// holdFor waits d (nothing when d <= 0) or until ctx ends.
func (b *Backend) holdFor(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// HTTPStatus is the HTTP status a gRPC code stands for, for logs and front doors that
// speak HTTP: the mapping google/rpc/code.proto gives for each code ("HTTP Mapping").
func HTTPStatus(c codes.Code) int {
	switch c {
	case codes.OK:
		return http.StatusOK
	case codes.Canceled:
		return 499 // "Client Closed Request", which net/http has no name for
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		return http.StatusBadRequest
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.NotFound:
		return http.StatusNotFound
	case codes.AlreadyExists, codes.Aborted:
		return http.StatusConflict
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Unimplemented:
		return http.StatusNotImplemented
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError // Unknown, Internal, DataLoss
}

// QuoteFromRPC decodes a backend's gRPC answer.
func QuoteFromRPC(m *wrapperspb.BytesValue) (Quote, error) {
	var q Quote
	if err := json.Unmarshal(m.GetValue(), &q); err != nil {
		return Quote{}, fmt.Errorf("inventory answer: %w", err)
	}
	return q, nil
}
