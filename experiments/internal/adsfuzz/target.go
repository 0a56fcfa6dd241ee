package adsfuzz

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/xds-workbench/lab/shared/xdslog"
)

// Target is what a fuzz target drives, built once per fuzz worker (setup per input
// would dominate): a connection to the server under test, the recorder whose log is
// checked and that log, and the witness stream's IDs.
type Target struct {
	Conn    *grpc.ClientConn
	Rec     *xdslog.Recorder
	Log     *Log
	Witness map[int64]bool
}

// Exercise runs s on t and then checks the invariants: the goroutines back to their
// count before it, no stream modelled but the witness, and the log lines it caused
// valid (CheckLog). recvLimit is the server's receive limit (Run's at-limit requests).
func (t *Target) Exercise(s Script, recvLimit int) error {
	baseline := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	Run(ctx, t.Conn, s, recvLimit)
	return t.Check(baseline)
}

// Check checks what scripts left behind once they ran, against the goroutine count
// before them.
func (t *Target) Check(baseline int) error {
	if err := WaitGoroutines(baseline, 10*time.Second); err != nil {
		return err
	}
	if err := WaitStreams(t.Rec, t.Witness, 10*time.Second); err != nil {
		return err
	}
	if err := CheckLog(t.Log.Take(), t.Witness); err != nil {
		return fmt.Errorf("xds.log: %w", err)
	}
	return nil
}

// Serve serves on a new in-memory listener and returns it and a connection to it.
func Serve(serve func(net.Listener) error) (*bufconn.Listener, *grpc.ClientConn, error) {
	lis := bufconn.Listen(1 << 20)
	go func() { _ = serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufnet", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		return nil, nil, fmt.Errorf("dial bufconn: %w", err)
	}
	return lis, conn, nil
}
