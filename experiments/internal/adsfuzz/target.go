package adsfuzz

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"time"

	"google.golang.org/grpc"

	"github.com/xds-workbench/lab/shared/bufconntest"
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

// Serve serves serve (a server's Serve) in memory for the rest of the process, connects
// t to it and opens the witness stream (Witness) of the protocol delta says.
func (t *Target) Serve(serve func(net.Listener) error, delta bool) error {
	conn, err := bufconntest.Start(serve).NewClient()
	if err != nil {
		return fmt.Errorf("dial bufconn: %w", err)
	}
	t.Conn = conn
	t.Witness, err = Witness(context.Background(), conn, delta, t.Log, 10*time.Second)
	return err
}
