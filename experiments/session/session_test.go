package session_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xds-workbench/lab/experiments/client"
	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/session"
	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/experiments/testenv"
	"github.com/xds-workbench/lab/shared/bufconntest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/syncbuf"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// acks collects the ACK events the session's recorders write, per server.
type acks struct {
	mu   sync.Mutex
	seen map[int]map[string]string // server -> type -> version ACKed
	more chan struct{}
}

func newAcks() *acks { return &acks{seen: map[int]map[string]string{}, more: make(chan struct{}, 1)} }

func (a *acks) observe(e xdslog.Event) {
	if e.Event != xdslog.EventAck {
		return
	}
	a.mu.Lock()
	if a.seen[e.Server] == nil {
		a.seen[e.Server] = map[string]string{}
	}
	a.seen[e.Server][e.Type] = e.SentVersion
	a.mu.Unlock()
	select {
	case a.more <- struct{}{}:
	default:
	}
}

// wait waits until server ACKed version of every type of types, or fails t at the
// deadline.
func (a *acks) wait(t *testing.T, server int, version string, types ...string) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		a.mu.Lock()
		n := 0
		for _, typ := range types {
			if a.seen[server][typ] == version {
				n++
			}
		}
		a.mu.Unlock()
		if n == len(types) {
			return
		}
		select {
		case <-a.more:
		case <-deadline.C:
			t.Fatalf("server %d: no ACK of version %q for %v (ACKed: %v)", server, version, types, a.seen[server])
		}
	}
}

func newSession(t *testing.T, mode protocol.Mode, a *acks) (*session.Session, *syncbuf.Buffer) {
	t.Helper()
	var log syncbuf.Buffer
	s, err := session.New(session.Options{ControlPlane: controlplane.Options{Mode: mode, Addr: "127.0.0.1:0"},
		Log: &log, Record: []xdslog.Option{xdslog.WithObserver(a.observe)}})
	if err != nil {
		t.Fatal(err)
	}
	// Close is idempotent: a test that fails early still stops what it started.
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s, &log
}

// TestSessionPublishRestartClose is a session's life: publish, the simulated client's
// ACK in the recorder, a control-plane restart on the same address with the next server
// number and the step kept, and Close stopping the client and the server.
func TestSessionPublishRestartClose(t *testing.T) {
	testenv.VerifyNoLeaks(t)
	for _, mode := range protocol.Modes {
		t.Run(mode.String(), func(t *testing.T) {
			ctx := t.Context()
			a := newAcks()
			s, log := newSession(t, mode, a)
			if err := s.Start(ctx); err != nil {
				t.Fatal(err)
			}
			addr := s.Addr()
			if !strings.HasPrefix(addr, "127.0.0.1:") || s.Server() != 1 {
				t.Fatalf("addr %q server %d, want 127.0.0.1:PORT and server 1", addr, s.Server())
			}
			s.SetStep("first")
			sim, err := client.NewSim(client.SimOptions{Mode: mode, Addr: addr})
			if err != nil {
				t.Fatal(err)
			}
			s.AddClient(sim)
			if err := sim.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Publish(ctx, resources.State{Version: "1", ListenerPort: 10000, InventoryPort: 18101}); err != nil {
				t.Fatal(err)
			}
			a.wait(t, 1, "1", "CDS", "EDS", "LDS", "RDS")

			if err := s.RestartControlPlane(); err != nil {
				t.Fatal(err)
			}
			if s.Addr() != addr || s.Server() != 2 {
				t.Fatalf("after restart: addr %q server %d, want %q and 2", s.Addr(), s.Server(), addr)
			}
			if _, err := s.Publish(ctx, resources.State{Version: "2", ListenerPort: 10000, InventoryPort: 18102}); err != nil {
				t.Fatal(err)
			}
			// The client reconnected to the new server by itself; the change is the endpoint's.
			a.wait(t, 2, "2", "EDS")
			if len(sim.State().Accepted[resources.EDS]) == 0 {
				t.Error("the client holds no endpoints after the restart")
			}

			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if s.ControlPlane().ActiveStreams() != 0 {
				t.Errorf("%d streams still open after Close", s.ControlPlane().ActiveStreams())
			}
			if !strings.Contains(log.String(), `"step":"first"`) || !strings.Contains(log.String(), `"server":2`) {
				t.Errorf("xds.log lacks the step kept across the restart or the second server:\n%s", log.String())
			}
		})
	}
}

// TestSessionServesABufconnListener is the session built in a test and served on a
// listener the test brings, as grpc.Server.Serve is.
func TestSessionServesABufconnListener(t *testing.T) {
	testenv.VerifyNoLeaks(t)
	a := newAcks()
	s, _ := newSession(t, protocol.Delta, a)
	lis := bufconntest.Listen()
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	sim, err := client.NewSim(client.SimOptions{Mode: protocol.Delta})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := lis.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- sim.RunOn(ctx, conn) }()
	t.Cleanup(func() { cancel(); <-ran; _ = conn.Close() })
	if _, err := s.Publish(ctx, resources.State{Version: "1", ListenerPort: 10000, InventoryPort: 18101}); err != nil {
		t.Fatal(err)
	}
	a.wait(t, 1, "1", "CDS", "EDS", "LDS", "RDS")
	if _, err := sim.Simulated().WaitFor(ctx, func(st simclient.State) bool { return len(st.Accepted[resources.CDS]) == 1 }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-done
	if err := s.RestartControlPlane(); err == nil {
		t.Error("a closed session restarted its control plane")
	}
}

// TestNewRefusesWhatIsNotItsOwn: the log is the session's to require, the control
// plane's options are the control plane's to refuse (validated once, by their owner).
func TestNewRefusesWhatIsNotItsOwn(t *testing.T) {
	var log syncbuf.Buffer
	if _, err := session.New(session.Options{ControlPlane: controlplane.Options{Mode: protocol.SotW}}); err == nil || !strings.Contains(err.Error(), "no log") {
		t.Errorf("no log: err %v", err)
	}
	rec := xdslog.NewRecorder(&log, protocol.SotW)
	if _, err := session.New(session.Options{ControlPlane: controlplane.Options{Mode: protocol.SotW, Recorder: rec}, Log: &log}); err == nil {
		t.Error("a recorder of the caller's was taken")
	}
	_, err := session.New(session.Options{ControlPlane: controlplane.Options{Mode: protocol.Delta, NackPolicy: "resend"}, Log: &log})
	if err == nil || !strings.Contains(err.Error(), "SotW option") {
		t.Errorf("delta with a NACK policy: err %v, want the control plane's refusal", err)
	}
}
