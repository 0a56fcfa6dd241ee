// Package bufconntest serves gRPC in memory for tests: a server on an in-memory listener
// (grpc's bufconn) and client connections to it, set up and torn down one way. Every
// test that serves a control plane, a transport, a tap or a library server without a
// port uses it, rather than a copy of its own.
package bufconntest

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
)

// bufSize is each connection's buffer in either direction: a message larger than it
// still passes, in pieces.
const bufSize = 1 << 20

// Listener is an in-memory listener: a net.Listener for a server's Serve, and what its
// clients dial.
type Listener struct{ *bufconn.Listener }

// Listen returns a new in-memory listener that nothing serves yet.
func Listen() *Listener { return &Listener{bufconn.Listen(bufSize)} }

// Start runs serve (a server's Serve) on a new in-memory listener in the background and
// returns the listener. Nothing stops it: for a server that lives as long as the process
// (a fuzz worker's); a test's server is Serve's.
func Start(serve func(net.Listener) error) *Listener {
	l := Listen()
	go func() { _ = serve(l) }()
	return l
}

// Serve is Start for a test: stop (the server's Stop) is called when t ends.
func Serve(t testing.TB, serve func(net.Listener) error, stop func()) *Listener {
	t.Helper()
	l := Start(serve)
	t.Cleanup(stop)
	return l
}

// ServeGRPC serves a new gRPC server, built with opts, with what register registers on
// it (a front end's Register, a library server), until t ends.
func ServeGRPC(t testing.TB, register func(*grpc.Server), opts ...grpc.ServerOption) *Listener {
	t.Helper()
	srv := grpc.NewServer(opts...)
	register(srv)
	return Serve(t, srv.Serve, srv.Stop)
}

// ContextDialer dials l, whatever the address: the function grpc.WithContextDialer and
// a tap's Dialer take.
func (l *Listener) ContextDialer(ctx context.Context, _ string) (net.Conn, error) {
	return l.DialContext(ctx)
}

// NewClient returns a client connection to l, without TLS, with opts added; like
// grpc.NewClient it connects on first use. Closing it is the caller's.
func (l *Listener) NewClient(opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	return grpc.NewClient("passthrough:///bufconn", append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(l.ContextDialer),
	}, opts...)...)
}

// Dial is NewClient for a test: the connection is closed when t ends.
func (l *Listener) Dial(t testing.TB, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	conn, err := l.NewClient(opts...)
	if err != nil {
		t.Fatalf("dial bufconn: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}
