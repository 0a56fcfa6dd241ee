package sotw

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/simclient"
	"github.com/xds-workbench/lab/experiments/simclient/simclienttest"
	"github.com/xds-workbench/lab/experiments/testenv"
	"github.com/xds-workbench/lab/shared/bufconntest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/publish/publishtest"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// deadline bounds every wait; the machine may be slow, so it is generous.
const deadline = 20 * time.Second

// seen is one xds.log event with the monotonic time the recorder emitted it and, for an
// RDS NACK, the backoff count before that NACK was counted.
type seen struct {
	at     time.Time
	e      xdslog.Event
	before int
}

// rig is a SotW transport on a snapshot cache fed by a publisher, served over bufconn,
// with every xds.log event observed as it is emitted.
type rig struct {
	t   *testing.T
	ctx context.Context
	// stopServer cancels the context the transport's library server runs under.
	stopServer context.CancelFunc
	rec        *xdslog.Recorder
	pub        *publish.Publisher
	fe         *FrontEnd
	lis        *bufconntest.Listener

	mu      sync.Mutex
	events  []seen
	changed chan struct{}
}

func newRig(t *testing.T, log io.Writer, cfg Config) *rig {
	t.Helper()
	// First, so that its check runs after every cleanup registered below.
	testenv.VerifyNoLeaks(t)
	ctx, cancel := context.WithCancel(context.Background())
	r := &rig{t: t, ctx: ctx, stopServer: cancel, changed: make(chan struct{})}
	var fe atomic.Pointer[FrontEnd]
	r.rec = xdslog.NewRecorder(log, protocol.SotW, xdslog.WithObserver(func(e xdslog.Event) {
		s := seen{at: time.Now(), e: e}
		if f := fe.Load(); f != nil && e.Event == xdslog.EventNack {
			// The observer runs before the transport counts this NACK.
			s.before = f.nackCount(e.Stream, resources.Type(e.Type))
		}
		r.mu.Lock()
		r.events = append(r.events, s)
		close(r.changed)
		r.changed = make(chan struct{})
		r.mu.Unlock()
	}))
	sc := publish.NewSnapshotCache(nil)
	pub, err := publish.NewPublisher(publish.PublisherConfig{Cache: sc, Recorder: r.rec})
	require.NoError(t, err)
	r.pub = pub
	cfg.Cache, cfg.Recorder, cfg.Describe = sc, r.rec, pub.Describe
	f, err := New(ctx, cfg)
	require.NoError(t, err)
	fe.Store(f)
	r.fe = f
	r.lis = bufconntest.ServeGRPC(t, f.Register)
	t.Cleanup(cancel)
	return r
}

// connect runs a simulated client on a new stream; the returned stop ends it and waits.
func (r *rig) connect(c *simclient.Client) (stop func()) {
	r.t.Helper()
	conn, err := r.lis.NewClient()
	require.NoError(r.t, err)
	stopClient := simclienttest.Start(context.Background(), c, conn)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			stopClient()
			_ = conn.Close()
		})
	}
	r.t.Cleanup(stop)
	return stop
}

func (r *rig) publish(step string, s resources.State) {
	r.t.Helper()
	r.rec.SetStep(step)
	publishtest.Publish(r.t, r.pub, s)
}

// waitEvents blocks until cond holds for the events so far, or fails at the deadline.
func (r *rig) waitEvents(what string, cond func([]seen) bool) []seen {
	r.t.Helper()
	timeout := time.NewTimer(deadline)
	defer timeout.Stop()
	for {
		r.mu.Lock()
		// Events are only appended: the elements up to len never change, so the slice
		// is shared rather than copied (a storm records thousands).
		ev, ch := r.events[:len(r.events):len(r.events)], r.changed
		r.mu.Unlock()
		if cond(ev) {
			return ev
		}
		select {
		case <-ch:
		case <-timeout.C:
			r.t.Fatalf("no %s within %s", what, deadline)
		}
	}
}

// of keeps the events of one kind, type and step ("" for any step).
func of(ev []seen, event, typ, step string) []seen {
	var out []seen
	for _, s := range ev {
		if s.e.Event == event && s.e.Type == typ && (step == "" || s.e.Step == step) {
			out = append(out, s)
		}
	}
	return out
}

func atLeast(n int, event, typ, step string) func([]seen) bool {
	return func(ev []seen) bool { return len(of(ev, event, typ, step)) >= n }
}

// startInvalid connects a simulated client, has it accept version 1 and then publishes
// version 2 with the invalid route (step "invalid"), returning once the first RDS NACK
// is recorded.
func startInvalid(t *testing.T, r *rig) *simclient.Client {
	t.Helper()
	c, err := simclient.New(protocol.SotW, "")
	require.NoError(t, err)
	r.publish("initial", resources.State{Version: "1", InventoryPort: 18080})
	r.connect(c)
	simclienttest.WaitFor(t, c, deadline, "version 1 accepted", func(s simclient.State) bool { return s.VersionInfo[resources.RDS] == "1" })
	r.publish("invalid", resources.State{Version: "2", InventoryPort: 18080, InvalidRoute: true})
	r.waitEvents("the first RDS NACK", atLeast(1, xdslog.EventNack, "RDS", "invalid"))
	return c
}

func TestParseNackPolicy(t *testing.T) {
	for _, p := range []NackPolicy{Resend, Hold, Backoff, Revert} {
		got, err := ParseNackPolicy(string(p))
		require.NoError(t, err)
		assert.Equal(t, p, got)
	}
	got, err := ParseNackPolicy("")
	require.NoError(t, err)
	assert.Equal(t, Resend, got, "the library's behaviour is the default")
	_, err = ParseNackPolicy("ignore")
	require.EqualError(t, err, `unknown NACK policy "ignore" (want resend, hold, backoff or revert)`)
	assert.Equal(t, []NackPolicy{Resend, Hold, Backoff, Revert}, Policies)
}

func TestNewRefusesBadPolicyConfig(t *testing.T) {
	cache := publish.NewSnapshotCache(nil)
	for name, c := range map[string]struct {
		cfg  Config
		want string
	}{
		"revert without OnNack": {Config{Cache: cache, NackPolicy: Revert}, "needs Config.OnNack"},
		"negative base":         {Config{Cache: cache, NackPolicy: Backoff, BackoffBase: -time.Second}, "negative backoff"},
		"max below base":        {Config{Cache: cache, NackPolicy: Backoff, BackoffBase: time.Second, BackoffMax: time.Millisecond}, "below its base"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(context.Background(), c.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestBackoffDelay(t *testing.T) {
	ms := time.Millisecond
	for k, want := range []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 5000 * ms, 5000 * ms} {
		assert.Equal(t, want, BackoffDelay(k+1, DefaultBackoffBase, DefaultBackoffMax), "NACK %d", k+1)
	}
	assert.Equal(t, DefaultBackoffMax, BackoffDelay(1<<30, DefaultBackoffBase, DefaultBackoffMax), "no overflow")
	assert.Equal(t, time.Hour, BackoffDelay(100, time.Hour, time.Hour))
}

// TestBackoffGapsGrow: under backoff the k-th consecutive RDS NACK waits base*2^(k-1)
// before the library re-sends, so the gaps between NACKs grow; an ACK resets the count.
// Lower bounds only (half the delay): the machine may be slow, never fast.
func TestBackoffGapsGrow(t *testing.T) {
	r := newRig(t, io.Discard, Config{NackPolicy: Backoff})
	c := startInvalid(t, r)
	const nacks = 5
	ev := of(r.waitEvents("5 RDS NACKs", atLeast(nacks, xdslog.EventNack, "RDS", "invalid")), xdslog.EventNack, "RDS", "invalid")
	for k := 1; k < nacks; k++ {
		gap := ev[k].at.Sub(ev[k-1].at)
		assert.GreaterOrEqual(t, gap, BackoffDelay(k, DefaultBackoffBase, DefaultBackoffMax)/2, "gap after NACK %d", k)
	}
	for k, s := range ev[:nacks] {
		assert.Equal(t, k, s.before, "NACK %d counts the NACKs before it", k+1)
		assert.Equal(t, k+1, s.e.Repeat, "the library re-sent the same rejected content")
	}

	// Recovery: the valid route is accepted (after the wait in progress) and the ACK
	// resets the count, so the next invalid state starts again at the base delay.
	r.publish("recover", resources.State{Version: "3", InventoryPort: 18080})
	simclienttest.WaitFor(t, c, deadline, "version 3 accepted", func(s simclient.State) bool { return s.VersionInfo[resources.RDS] == "3" })
	r.publish("invalid-again", resources.State{Version: "4", InventoryPort: 18080, InvalidRoute: true})
	ev = of(r.waitEvents("2 RDS NACKs of version 4", atLeast(2, xdslog.EventNack, "RDS", "invalid-again")), xdslog.EventNack, "RDS", "invalid-again")
	assert.Equal(t, 0, ev[0].before, "the ACK of version 3 reset the count")
	assert.Equal(t, 1, ev[1].before)
	assert.GreaterOrEqual(t, ev[1].at.Sub(ev[0].at), DefaultBackoffBase/2)
}

// TestBackoffFarFewerSendsThanResend: in the time backoff takes for 4 NACKs, resend
// re-sends the rejected route many times over.
func TestBackoffFarFewerSendsThanResend(t *testing.T) {
	// sendsWithin counts the RDS sends of the rejected version 2 from the first NACK of it
	// to window later.
	sendsWithin := func(ev []seen, window time.Duration) int {
		first := of(ev, xdslog.EventNack, "RDS", "invalid")[0].at
		n := 0
		for _, s := range of(ev, xdslog.EventSend, "RDS", "invalid") {
			if s.e.Version == "2" && !s.at.After(first.Add(window)) {
				n++
			}
		}
		return n
	}

	b := newRig(t, io.Discard, Config{NackPolicy: Backoff})
	startInvalid(t, b)
	ev := b.waitEvents("4 RDS NACKs", atLeast(4, xdslog.EventNack, "RDS", "invalid"))
	nacks := of(ev, xdslog.EventNack, "RDS", "invalid")
	window := nacks[3].at.Sub(nacks[0].at)
	backoffSends := sendsWithin(ev, window)
	b.stopServer()

	r := newRig(t, io.Discard, Config{NackPolicy: Resend})
	startInvalid(t, r)
	first := of(r.waitEvents("the first RDS NACK", atLeast(1, xdslog.EventNack, "RDS", "invalid")), xdslog.EventNack, "RDS", "invalid")[0].at
	ev = r.waitEvents("the storm to outlast the backoff window", func(ev []seen) bool {
		return ev[len(ev)-1].at.Sub(first) > window
	})
	resendSends := sendsWithin(ev, window)
	r.stopServer()

	t.Logf("in %s after the first NACK: %d sends of the rejected route under backoff, %d under resend", window.Round(time.Millisecond), backoffSends, resendSends)
	assert.LessOrEqual(t, backoffSends, 4, "the first send and three delayed re-sends")
	assert.Greater(t, resendSends, 5*backoffSends, "resend storms")
}

// TestBackoffWaitEndsWithStream: a client that goes away during a long backoff ends the
// wait, and its stream closes at once rather than after the delay.
func TestBackoffWaitEndsWithStream(t *testing.T) {
	r := newRig(t, io.Discard, Config{NackPolicy: Backoff, BackoffBase: time.Hour})
	c, err := simclient.New(protocol.SotW, "")
	require.NoError(t, err)
	r.publish("initial", resources.State{Version: "1", InventoryPort: 18080})
	stop := r.connect(c)
	simclienttest.WaitFor(t, c, deadline, "version 1 accepted", func(s simclient.State) bool { return s.VersionInfo[resources.RDS] == "1" })
	r.publish("invalid", resources.State{Version: "2", InventoryPort: 18080, InvalidRoute: true})
	nack := of(r.waitEvents("the RDS NACK", atLeast(1, xdslog.EventNack, "RDS", "invalid")), xdslog.EventNack, "RDS", "invalid")[0]
	stop()
	r.waitEvents("the stream to close", func(ev []seen) bool { return len(of(ev, xdslog.EventStreamClose, "", "")) == 1 })
	assert.Equal(t, 0, r.fe.nackCount(nack.e.Stream, resources.RDS), "a closed stream's state is dropped")
}

// TestBackoffWaitEndsWithServer: stopping the server during a long backoff ends the wait.
func TestBackoffWaitEndsWithServer(t *testing.T) {
	r := newRig(t, io.Discard, Config{NackPolicy: Backoff, BackoffBase: time.Hour})
	c := startInvalid(t, r)
	r.stopServer()
	r.waitEvents("the stream to close", func(ev []seen) bool { return len(of(ev, xdslog.EventStreamClose, "", "")) == 1 })
	simclienttest.WaitFor(t, c, deadline, "the client to see the stream end", func(s simclient.State) bool { return !s.Connected })
}

// TestRevertTellsOnNackAndHolds: under revert the transport parks the watch (nothing is
// re-sent) and tells OnNack on another goroutine: the stream goes on serving while
// OnNack has not returned.
func TestRevertTellsOnNackAndHolds(t *testing.T) {
	got := make(chan Nack, 1)
	release := make(chan struct{})
	r := newRig(t, io.Discard, Config{NackPolicy: Revert, OnNack: func(n Nack) {
		got <- n
		<-release
	}})
	defer close(release)
	c := startInvalid(t, r)
	var n Nack
	select {
	case n = <-got:
	case <-time.After(deadline):
		t.Fatal("OnNack not called")
	}
	stream := of(r.waitEvents("the NACK", atLeast(1, xdslog.EventNack, "RDS", "")), xdslog.EventNack, "RDS", "")[0].e.Stream
	assert.Equal(t, Nack{Stream: stream, Node: resources.NodeID, Type: resources.RDS, SentVersion: "2", AcceptedVersion: "1", Error: n.Error}, n)
	assert.Contains(t, n.Error, "PathSpecifier")

	// OnNack is still blocked; the stream serves the next publish anyway.
	r.publish("recover", resources.State{Version: "3", InventoryPort: 18080})
	simclienttest.WaitFor(t, c, deadline, "version 3 accepted", func(s simclient.State) bool { return s.VersionInfo[resources.RDS] == "3" })
	ev := r.waitEvents("the ACK of version 3", atLeast(1, xdslog.EventAck, "RDS", "recover"))
	assert.Len(t, of(ev, xdslog.EventSend, "RDS", "invalid"), 1, "the rejected route was held, never re-sent")
	assert.Len(t, of(ev, xdslog.EventNack, "RDS", ""), 1)
}

func TestPolicyNames(t *testing.T) {
	assert.Equal(t, []string{"resend", "hold", "backoff", "revert"}, PolicyNames())
}
