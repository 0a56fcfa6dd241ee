package load

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/xds-workbench/lab/experiments/testenv"
	"github.com/xds-workbench/lab/shared/loopback"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, testenv.LeakOptions()...) }

// server is a loopback backend answering like an inventory backend, over HTTP/1.1 and
// h2c, counting the connections and the protocols it saw.
type server struct {
	name   string
	url    string
	conns  atomic.Int64
	mu     sync.Mutex
	protos map[string]int
	status atomic.Int64
}

func startServer(t *testing.T, name string) *server {
	t.Helper()
	s := &server{name: name, protos: map[string]int{}}
	s.status.Store(200)
	l, err := loopback.Listen(0)
	require.NoError(t, err)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.protos[r.Proto]++
		s.mu.Unlock()
		w.Header().Set("x-request-id", r.Header.Get("x-request-id"))
		w.WriteHeader(int(s.status.Load()))
		_ = json.NewEncoder(w).Encode(map[string]string{"backend": s.name, "request_id": r.Header.Get("x-request-id")})
	})
	protos := new(http.Protocols)
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: h, Protocols: protos, ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	s.url = "http://" + l.Addr().String() + "/quote"
	return s
}

func TestCheckRefusesAbsurdLoad(t *testing.T) {
	ok := Options{Rate: 100, Connections: 4, Protocol: HTTP2, Target: "http://127.0.0.1:19000/quote"}
	require.NoError(t, ok.Check())
	for name, c := range map[string]struct {
		mut  func(*Options)
		want string
	}{
		"rate":        {func(o *Options) { o.Rate = 1e6 }, "load rate 1000000: want 1..20000 requests per second"},
		"zero rate":   {func(o *Options) { o.Rate = 0 }, "load rate 0"},
		"connections": {func(o *Options) { o.Connections = 1000 }, "load connections 1000: want 1..64"},
		"more conns":  {func(o *Options) { o.Rate, o.Connections = 2, 4 }, "more than the rate"},
		"protocol":    {func(o *Options) { o.Protocol = "spdy" }, `unknown protocol "spdy"`},
		"not local":   {func(o *Options) { o.Target = "http://example.com/quote" }, "only 127.0.0.1 is allowed"},
		"not http":    {func(o *Options) { o.Target = "ftp://127.0.0.1/x" }, "want http://127.0.0.1:PORT/PATH"},
	} {
		t.Run(name, func(t *testing.T) {
			o := ok
			c.mut(&o)
			err := o.Check()
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "\n")
			_, err = Start(context.Background(), o)
			assert.Error(t, err, "nothing starts")
		})
	}
}

// TestLoadKeepsEveryResponse: at 200 rps over 4 connections for about a second, every
// request is answered and kept, with its ID, backend and status; the rate is met; and
// the protocol and connection count are what was asked.
func TestLoadKeepsEveryResponse(t *testing.T) {
	for _, proto := range []Protocol{HTTP1, HTTP2} {
		t.Run(string(proto), func(t *testing.T) {
			s := startServer(t, "v1")
			g, err := Start(context.Background(), Options{Rate: 200, Connections: 4, Protocol: proto, Target: s.url, IDPrefix: "t"})
			require.NoError(t, err)
			// Wait on a condition: at least 200 responses (about a second's worth).
			require.Eventually(t, func() bool { return len(g.Responses()) >= 200 }, 20*time.Second, 10*time.Millisecond)
			rs := g.Stop()
			require.GreaterOrEqual(t, len(rs), 200)
			ids := map[string]bool{}
			for _, r := range rs {
				assert.Equal(t, 200, r.Status, r.Error)
				assert.Equal(t, "v1", r.Backend)
				assert.False(t, ids[r.ID], "IDs are unique: %s", r.ID)
				ids[r.ID] = true
				assert.Regexp(t, `^t-[0-3]-\d+$`, r.ID)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			want := "HTTP/1.1"
			if proto == HTTP2 {
				want = "HTTP/2.0"
			}
			assert.Equal(t, len(rs), s.protos[want], "every request over %s: %v", want, s.protos)
			assert.LessOrEqual(t, s.conns.Load(), int64(4), "at most one connection per generator")
			sum := Summarize(rs, rs[0].Sent, rs[len(rs)-1].Sent.Add(time.Nanosecond), 200, nil)
			assert.Equal(t, len(rs), sum.Requests)
			assert.Equal(t, len(rs), sum.ByBackend["v1"])
			assert.Empty(t, sum.Failures)
			assert.Greater(t, sum.P99MS, 0.0)
		})
	}
}

// TestLoadCountsFailuresByStatusAndFlag: failures are counted, keyed by status and the
// access log's flag, and an unreachable target is counted too (status 0), never dropped.
func TestLoadCountsFailuresByStatusAndFlag(t *testing.T) {
	s := startServer(t, "v1")
	s.status.Store(503)
	g, err := Start(context.Background(), Options{Rate: 100, Connections: 1, Target: s.url})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(g.Responses()) >= 20 }, 20*time.Second, 10*time.Millisecond)
	rs := g.Stop()
	flags := map[string]string{}
	for i, r := range rs {
		if i%2 == 0 {
			flags[r.ID] = "NC"
		}
	}
	sum := Summarize(rs, rs[0].Sent, time.Now(), 100, flags)
	assert.Equal(t, len(rs), sum.Failures["503 NC"]+sum.Failures["503"])
	assert.Equal(t, (len(rs)+1)/2, sum.Failures["503 NC"])
	assert.Zero(t, sum.OK)

	port, err := loopback.FreePort()
	require.NoError(t, err)
	defer loopback.Release(port)
	g, err = Start(context.Background(), Options{Rate: 50, Connections: 1, Target: "http://" + loopback.Addr(port) + "/quote", Timeout: 200 * time.Millisecond})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(g.Responses()) >= 5 }, 20*time.Second, 10*time.Millisecond)
	rs = g.Stop()
	sum = Summarize(rs, rs[0].Sent, time.Now(), 50, nil)
	assert.Equal(t, len(rs), sum.Failures["0 refused"], "%v", sum.Failures)
}

// TestLoadStopsWithItsContext: cancelling the context ends the load by itself.
func TestLoadStopsWithItsContext(t *testing.T) {
	s := startServer(t, "v1")
	ctx, cancel := context.WithCancel(context.Background())
	g, err := Start(ctx, Options{Rate: 100, Connections: 2, Target: s.url})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(g.Responses()) >= 5 }, 20*time.Second, 10*time.Millisecond)
	cancel()
	select {
	case <-g.Stopped():
	case <-time.After(10 * time.Second):
		t.Fatal("the load did not stop with its context")
	}
	n := len(g.Responses())
	assert.Equal(t, n, len(g.Stop()), "nothing arrives after the load stopped")
	assert.Equal(t, int64(n), g.answered.Load(), "every request issued was answered before it stopped")
}

func TestTransit(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int, backend string) Response {
		return Response{Sent: t0.Add(time.Duration(ms) * time.Millisecond), Status: 200, Backend: backend}
	}
	rs := []Response{at(-5, "v1"), at(2, "v1"), at(4, "v2"), at(6, "v1"), at(8, "v2"), at(10, "v2")}
	tr := Transit(rs, t0, t0.Add(time.Second), "v1", "v2", nil)
	require.NotNil(t, tr.FirstOldMS)
	assert.Equal(t, 2.0, *tr.FirstOldMS)
	assert.Equal(t, 6.0, *tr.LastOldMS)
	require.NotNil(t, tr.AllNewMS)
	assert.Equal(t, 8.0, *tr.AllNewMS)
	assert.Equal(t, 2, tr.OldAfter)
	require.NotNil(t, tr.LastOldAnsweredMS)
	assert.Equal(t, 6.0, *tr.LastOldAnsweredMS, "answered at once: the last old answer is the last one sent")
	slow := Response{Sent: t0.Add(-time.Millisecond), Latency: 50 * time.Millisecond, Status: 200, Backend: "v1"}
	inFlight := Transit([]Response{slow, at(4, "v2")}, t0, t0.Add(time.Second), "v1", "v2", nil)
	require.NotNil(t, inFlight.LastOldAnsweredMS, "a request routed before the publish")
	assert.Equal(t, 49.0, *inFlight.LastOldAnsweredMS, "is answered by the old endpoint 49 ms after it")
	assert.Zero(t, inFlight.OldAfter)
	none := Transit(rs[:4], t0, t0.Add(time.Second), "v1", "v2", nil)
	assert.Nil(t, none.AllNewMS, "the last answer was not new")

	// A removal moves the traffic from a backend to Envoy's own answer.
	fail := func(ms int, id string) Response {
		return Response{ID: id, Sent: t0.Add(time.Duration(ms) * time.Millisecond), Status: 503}
	}
	rm := Transit([]Response{at(1, "v1"), fail(3, "a"), fail(5, "b")}, t0, t0.Add(time.Second), "v1", "503 NC", map[string]string{"a": "NC", "b": "NC"})
	assert.Equal(t, 1.0, *rm.LastOldMS)
	require.NotNil(t, rm.AllNewMS)
	assert.Equal(t, 3.0, *rm.AllNewMS)
}

// TestAnswer: one name per outcome, the same in counts, timelines and moves.
func TestAnswer(t *testing.T) {
	for _, c := range []struct {
		r    Response
		flag string
		want string
	}{
		{Response{Status: 200, Backend: "v1"}, "", "v1"},
		{Response{Status: 200}, "", "?"},
		{Response{Status: 503}, "NC", "503 NC"},
		{Response{Status: 503}, "-", "503"},
		{Response{Error: "dial tcp: connect: connection refused"}, "", "0 refused"},
		{Response{Error: "context deadline exceeded (Client.Timeout exceeded)"}, "", "0 timeout"},
		{Response{Error: "EOF"}, "", "0 no-response"},
	} {
		assert.Equal(t, c.want, Answer(c.r, c.flag), "%+v", c.r)
	}
}

// TestSummarizePercentiles: the latency percentiles are stats.Percentile's (nearest rank,
// rank ceil(p/100 x n)), the rule lab bench's per-proxy figures use too.
func TestSummarizePercentiles(t *testing.T) {
	t0 := time.Unix(1000, 0)
	responses := func(n int) []Response {
		var rs []Response
		for i := 1; i <= n; i++ {
			rs = append(rs, Response{ID: fmt.Sprint(i), Sent: t0.Add(time.Duration(i) * time.Millisecond),
				Latency: time.Duration(i) * time.Millisecond, Status: 200, Backend: "a"})
		}
		return rs
	}
	for _, c := range []struct {
		n             int
		p50, p99, max float64
	}{
		{100, 50, 99, 100},
		{60, 30, 60, 60}, // rank ceil(59.4) = 60: the largest, not the 59th
		{1, 1, 1, 1},
	} {
		s := Summarize(responses(c.n), t0, t0.Add(time.Second), 100, nil)
		assert.Equal(t, [3]float64{c.p50, c.p99, c.max}, [3]float64{s.P50MS, s.P99MS, s.MaxMS}, "n=%d: p50, p99, max (ms)", c.n)
	}
}

// TestTimeline: every response sent in the window lands in one bucket of its answer's
// series, successes by backend and failures by key, and the buckets cover the window.
func TestTimeline(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms, status int, backend string) Response {
		return Response{ID: fmt.Sprint("r", ms), Sent: t0.Add(time.Duration(ms) * time.Millisecond), Status: status, Backend: backend}
	}
	rs := []Response{at(-1, 200, "v1"), at(0, 200, "v1"), at(9, 200, "v1"), at(10, 503, ""), at(450, 200, "v2"), at(599, 200, "v2"), at(600, 200, "v2")}
	sum := Summarize(rs, t0, t0.Add(600*time.Millisecond), 10, map[string]string{"r10": "NC"})
	tl := sum.Timeline
	require.NotNil(t, tl)
	assert.Equal(t, 5.0, tl.BucketMS, "600 ms fit in 120 buckets of 5 ms")
	assert.Equal(t, t0, tl.Start)
	require.Len(t, tl.Series["v1"], 120)
	assert.Equal(t, 1, tl.Series["v1"][0])
	assert.Equal(t, 1, tl.Series["v1"][1])
	assert.Equal(t, 1, tl.Series["503 NC"][2])
	assert.Equal(t, 1, tl.Series["v2"][90])
	assert.Equal(t, 1, tl.Series["v2"][119])
	total := 0
	for _, s := range tl.Series {
		for _, n := range s {
			total += n
		}
	}
	assert.Equal(t, sum.Requests, total, "every request counted once, the ones outside the window not at all")
	long := Summarize(rs, t0, t0.Add(time.Minute), 10, nil)
	assert.Equal(t, 500.0, long.Timeline.BucketMS, "a minute in 120 buckets of half a second")
	assert.Len(t, long.Timeline.Series["v2"], 120)
}

// TestForget: responses already counted can be let go; the rest stay in order.
func TestForget(t *testing.T) {
	t0 := time.Now()
	g := &Generator{}
	for i := range 5 {
		g.resps = append(g.resps, Response{Sent: t0.Add(time.Duration(i) * time.Millisecond)})
	}
	g.Forget(t0.Add(2 * time.Millisecond))
	rs := g.Responses()
	require.Len(t, rs, 3)
	assert.Equal(t, t0.Add(2*time.Millisecond), rs[0].Sent)
}

// TestLoadExpires: a load ends by itself at its duration bound, says so, and keeps
// every response it got; a stopped load has not expired.
func TestLoadExpires(t *testing.T) {
	srv := startServer(t, "v1").url
	g, err := Start(t.Context(), Options{Rate: 50, Connections: 1, Target: srv, Duration: 200 * time.Millisecond})
	require.NoError(t, err)
	require.Eventually(t, g.Expired, 5*time.Second, 10*time.Millisecond, "the load ends at its bound")
	rs := g.Responses()
	assert.NotEmpty(t, rs)
	assert.LessOrEqual(t, len(rs), 11, "at most 50/s for 200 ms (and the first at once)")
	assert.Len(t, g.Stop(), len(rs), "nothing is lost")
	assert.False(t, g.Expired(), "once stopped it is stopped, not expired")

	_, err = Start(t.Context(), Options{Rate: 1, Connections: 1, Target: srv, Duration: time.Hour})
	assert.ErrorContains(t, err, "load duration 1h0m0s: want 0..10m0s")
}

// TestStopIsPrompt: after Stop no connection sends a request. A tick a worker already
// holds, or one vegeta's loop sends while Stop closes it, is refused by the targeter
// (whose call follows the request's timestamp) and dropped by collect.
func TestStopIsPrompt(t *testing.T) {
	s := startServer(t, "v1")
	for range 5 {
		g, err := Start(t.Context(), Options{Rate: 400, Connections: 4, Target: s.url})
		require.NoError(t, err)
		require.Eventually(t, func() bool { return len(g.Responses()) >= 40 }, 20*time.Second, 5*time.Millisecond)
		rs := g.Stop()
		// From when Stop told the pacers to stop, not from before the call: on a busy
		// machine the call itself can start a tick period or two late.
		at := g.stopAsked
		after := map[int]int{}
		for _, r := range rs {
			if r.Sent.After(at) {
				after[r.Conn]++
			}
		}
		assert.Empty(t, after, "requests sent after Stop, by connection")
		for _, r := range rs {
			assert.NotEqual(t, errStopped.Error(), r.Error, "a refused tick is not a response")
		}
	}
}
