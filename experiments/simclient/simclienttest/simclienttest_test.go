package simclienttest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/shared/protocol"
)

// TestStopEndsTheClient: stop returns only once Run has, and may be called twice. No
// server answers: the client need only run.
func TestStopEndsTheClient(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	lis := bufconn.Listen(1 << 10)
	defer lis.Close()
	conn, err := grpc.NewClient("passthrough:///bufnet", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	require.NoError(t, err)
	defer conn.Close()
	c, err := simclient.New(protocol.SotW, "")
	require.NoError(t, err)
	stop := Start(context.Background(), c, conn)
	stopped := make(chan struct{})
	go func() {
		stop()
		stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not return")
	}
}
