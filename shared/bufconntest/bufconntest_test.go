package bufconntest

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestServeGRPCServesUntilTheTestEnds: what register registers answers over Dial's
// connection; when the test ends the server stops and its listener closes.
func TestServeGRPCServesUntilTheTestEnds(t *testing.T) {
	var lis *Listener
	t.Run("serving", func(t *testing.T) {
		lis = ServeGRPC(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, health.NewServer()) })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := healthpb.NewHealthClient(lis.Dial(t)).Check(ctx, &healthpb.HealthCheckRequest{})
		require.NoError(t, err)
		assert.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())
	})
	_, err := lis.DialContext(context.Background())
	assert.Error(t, err, "the listener is closed once the test that served it ended")
}

// TestStartServesWhatContextDialerDials: serve gets the listener, and ContextDialer's
// connection, whatever the address, is the one it accepts.
func TestStartServesWhatContextDialerDials(t *testing.T) {
	accepted := make(chan net.Conn, 1)
	lis := Start(func(l net.Listener) error {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
		return err
	})
	defer lis.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := lis.ContextDialer(ctx, "any address")
	require.NoError(t, err)
	defer client.Close()
	var server net.Conn
	select {
	case server = <-accepted:
	case <-ctx.Done():
		t.Fatal("serve accepted no connection")
	}
	defer server.Close()
	go func() { _, _ = client.Write([]byte("ping")) }()
	got := make([]byte, 4)
	_, err = io.ReadFull(server, got)
	require.NoError(t, err)
	assert.Equal(t, "ping", string(got))
}
