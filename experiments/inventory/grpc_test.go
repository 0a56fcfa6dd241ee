package inventory

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// dialGRPC is a plain gRPC client of one backend (no xDS).
func dialGRPC(t *testing.T, b *Backend) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+b.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// invoke makes one call and returns the answer, its header metadata and its error.
func invoke(t *testing.T, conn *grpc.ClientConn, method, query, requestID string) (*wrapperspb.BytesValue, metadata.MD, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, MetadataRequestID, requestID)
	out := &wrapperspb.BytesValue{}
	var hdr metadata.MD
	err := conn.Invoke(ctx, method, wrapperspb.String(query), out, grpc.Header(&hdr))
	return out, hdr, err
}

// A gRPC call on the HTTP port is answered with the same quote and logged by request ID
// as an HTTP request is, beside HTTP requests on the same port.
func TestGRPCQuoteAndLog(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "v1.log")
	b := start(t, "v1", logPath)
	conn := dialGRPC(t, b)

	out, hdr, err := invoke(t, conn, "/quote/0", "sku=paper", "rpc-1")
	require.NoError(t, err)
	q, err := QuoteFromRPC(out)
	require.NoError(t, err)
	assert.Equal(t, Quote{Backend: "v1", SKU: "paper", RequestID: "rpc-1", Port: b.Port()}, q)
	assert.Equal(t, []string{"rpc-1"}, hdr.Get(MetadataRequestID))

	// The teaching route is the one-segment path /quote: served too, logged as sent.
	_, _, err = invoke(t, conn, "/quote", "sku=pen", "rpc-2")
	require.NoError(t, err)

	code, _, _ := do(t, http.MethodGet, "http://"+b.Addr()+"/quote?sku=ink", "http-1")
	assert.Equal(t, http.StatusOK, code, "HTTP still answered on the same port")

	for id, want := range map[string]LogLine{
		"rpc-1":  {Backend: "v1", Method: http.MethodPost, Path: "/quote/0", SKU: "paper", RequestID: "rpc-1", Status: 200, Proto: "HTTP/2.0", GRPCStatus: "OK"},
		"rpc-2":  {Backend: "v1", Method: http.MethodPost, Path: "/quote", SKU: "pen", RequestID: "rpc-2", Status: 200, Proto: "HTTP/2.0", GRPCStatus: "OK"},
		"http-1": {Backend: "v1", Method: http.MethodGet, Path: "/quote", SKU: "ink", RequestID: "http-1", Status: 200, Proto: "HTTP/1.1"},
	} {
		got, ok, err := b.Lookup(id)
		require.NoError(t, err)
		require.True(t, ok, id)
		assert.False(t, got.TS.IsZero(), id)
		got.TS = time.Time{}
		assert.Equal(t, want, got, id)
	}
	assert.Equal(t, 3, b.Count())
}

// A method outside /quote is NotFound, as the HTTP path's 404, and logged; a request
// that is not a query string is InvalidArgument.
func TestGRPCRefusals(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "v1.log")
	b := start(t, "v1", logPath)
	conn := dialGRPC(t, b)

	_, _, err := invoke(t, conn, "/inventory/List", "", "rpc-404")
	assert.Equal(t, codes.NotFound, status.Code(err), "%v", err)
	_, _, err = invoke(t, conn, "/quote/0", "sku=%zz", "rpc-400")
	assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)

	for id, want := range map[string][2]any{"rpc-404": {404, "NotFound"}, "rpc-400": {400, "InvalidArgument"}} {
		got, ok, err := b.Lookup(id)
		require.NoError(t, err)
		require.True(t, ok, id)
		assert.Equal(t, want[0], got.Status, id)
		assert.Equal(t, want[1], got.GRPCStatus, id)
	}
}

func TestHTTPStatusOfGRPCCodes(t *testing.T) {
	for c, want := range map[codes.Code]int{
		codes.OK: 200, codes.Canceled: 499, codes.Unknown: 500, codes.InvalidArgument: 400, codes.DeadlineExceeded: 504,
		codes.NotFound: 404, codes.AlreadyExists: 409, codes.PermissionDenied: 403, codes.ResourceExhausted: 429,
		codes.FailedPrecondition: 400, codes.Aborted: 409, codes.OutOfRange: 400, codes.Unimplemented: 501,
		codes.Internal: 500, codes.Unavailable: 503, codes.DataLoss: 500, codes.Unauthenticated: 401,
	} {
		assert.Equal(t, want, HTTPStatus(c), c.String())
	}
}
