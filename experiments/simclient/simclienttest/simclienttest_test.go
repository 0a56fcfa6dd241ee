package simclienttest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/shared/bufconntest"
	"github.com/xds-workbench/lab/shared/protocol"
)

// TestStopEndsTheClient: stop returns only once Run has, and may be called twice. No
// server answers: the client need only run.
func TestStopEndsTheClient(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	lis := bufconntest.Listen()
	defer lis.Close()
	conn, err := lis.NewClient()
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
