package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/experiments/clientview"
	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/experiments/inventory"
	"github.com/xds-workbench/lab/experiments/testenv"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// The soak: `lab serve` runs in-process (so the heap, goroutines and file descriptors
// measured are lab's), real Envoy is connected over ADS, and N `port A` / `port B` lines
// go through serve's standard input, each written as soon as serve has printed the
// previous publish ("version N: ..."). Afterwards every send in xds.log must have exactly
// one ACK (or NACK), Envoy must run the last version, and a request through Envoy's
// listener must reach the last backend. `make soak` runs 10,000 per mode; the normal
// suite runs soakShort.
const (
	soakEnv   = "LAB_SOAK_PUBLISHES"
	soakShort = 500
	// The figures are sampled over the first and the last soakWindowMax publishes (a
	// fifth of the run each when it is shorter), soakSamplesPerWindow times each.
	soakWindowMax        = 1000
	soakSamplesPerWindow = 20
)

// Leak bounds: the last window's median may exceed the first window's by at most this.
// They are deliberately generous, because this is a leak check, not a measurement of
// noise: anything that leaks per publish grows with the 8,000 publishes between the two
// windows of the full soak and blows far past them, while one-off growth does not.
//   - Goroutines +10 and fds +10: serve, the gRPC server, the one ADS stream, the two
//     backends and Envoy's output pipe are all in place before the first window. What
//     may legitimately appear later is a handful: a gRPC transport or keepalive
//     goroutine, a runtime worker, a timer. A goroutine or socket per publish (or per
//     send) would be thousands.
//   - Heap 2x + 4 MiB: HeapInuse is read after runtime.GC, so it is live data plus span
//     rounding. It still moves with what is in flight at the sample (gRPC buffers of a
//     few KB) and with bounded state that fills after the first window: the recorder
//     remembers the last 256 sends per stream and type, and at one send per 8-20
//     publishes that takes a few thousand publishes. Measured: +1 to +2.5 MiB at 10,000
//     and at 50,000 publishes alike, so it levels off. 2x absorbs that at any heap
//     size, and 4 MiB covers the small baseline (~8 MiB) where 2x alone is tight. A
//     retained snapshot per publish (four resources and their hashes, several KB) over
//     8,000 publishes is tens of MB and fails it; the per-publish growth is printed too,
//     so a slow leak under the bound is visible.
const (
	soakMaxGoroutineGrowth = 10
	soakMaxFDGrowth        = 10
	soakHeapFactor         = 2
	soakHeapSlack          = 4 << 20
)

func soakPublishes(t *testing.T) int {
	t.Helper()
	v := os.Getenv(soakEnv)
	if v == "" {
		return soakShort
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 20 {
		t.Fatalf("%s=%q: want a number of publishes >= 20", soakEnv, v)
	}
	return n
}

// soakSample is one reading of lab's own figures.
type soakSample struct {
	heap       uint64 // runtime.MemStats.HeapInuse after runtime.GC
	goroutines int
	fds        int // entries of /proc/self/fd
}

func soakTakeSample(t *testing.T) soakSample {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return soakSample{heap: ms.HeapInuse, goroutines: runtime.NumGoroutine(), fds: len(fds)}
}

func soakMedian[T int | uint64 | float64](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// soakOutput watches serve's output: the address it serves on, the last version it
// printed, and every error line. It keeps only a short tail, not 10,000 lines.
type soakOutput struct {
	mu        sync.Mutex
	partial   map[string][]byte
	addr      string
	published int
	tail      []string
	errs      []string
	notify    chan struct{}
}

var (
	soakServingRE = regexp.MustCompile(`^serving \S+ ADS on (127\.0\.0\.1:\d+) `)
	soakVersionRE = regexp.MustCompile(`^version (\d+): `)
)

func newSoakOutput() *soakOutput {
	return &soakOutput{partial: map[string][]byte{}, notify: make(chan struct{}, 1)}
}

type soakTagWriter struct {
	o   *soakOutput
	tag string
}

func (o *soakOutput) writer(tag string) io.Writer { return soakTagWriter{o, tag} }

func (w soakTagWriter) Write(p []byte) (int, error) {
	o := w.o
	o.mu.Lock()
	buf := append(o.partial[w.tag], p...)
	for {
		i := slices.Index(buf, '\n')
		if i < 0 {
			break
		}
		o.line(w.tag, string(buf[:i]))
		buf = buf[i+1:]
	}
	o.partial[w.tag] = slices.Clone(buf)
	o.mu.Unlock()
	select {
	case o.notify <- struct{}{}:
	default:
	}
	return len(p), nil
}

// line handles one complete line; o.mu is held.
func (o *soakOutput) line(tag, l string) {
	o.tail = append(o.tail, tag+": "+l)
	if len(o.tail) > 20 {
		o.tail = o.tail[1:]
	}
	if tag == "err" {
		if len(o.errs) < 50 {
			o.errs = append(o.errs, l)
		}
		return
	}
	if m := soakServingRE.FindStringSubmatch(l); m != nil {
		o.addr = m[1]
	}
	if m := soakVersionRE.FindStringSubmatch(l); m != nil {
		o.published, _ = strconv.Atoi(m[1])
	}
}

func (o *soakOutput) state() (addr string, published int, errs []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.addr, o.published, slices.Clone(o.errs)
}

func (o *soakOutput) tailText() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.tail, "\n")
}

// waitVersion blocks until serve has printed version want (it publishes in order) or
// has stopped, or the deadline passes.
func (o *soakOutput) waitVersion(t *testing.T, want int, timeout time.Duration, served <-chan struct{}) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		_, got, errs := o.state()
		if len(errs) > 0 {
			t.Fatalf("serve printed an error line waiting for version %d: %q\noutput tail:\n%s", want, errs, o.tailText())
		}
		if got >= want {
			return
		}
		select {
		case <-o.notify:
		case <-served:
			t.Fatalf("serve stopped before version %d; output tail:\n%s", want, o.tailText())
		case <-deadline.C:
			t.Fatalf("serve did not print version %d within %s (last %d); output tail:\n%s", want, timeout, got, o.tailText())
		}
	}
}

// soakResult is what one mode's soak measured.
type soakResult struct {
	mode            protocol.Mode
	publishes       int // soak publishes through stdin (version 1 excluded)
	logPublishes    int // publish events in xds.log (version 1 included)
	sends           map[string]int
	sendsTotal      int
	acks, nacks     int
	streams         int
	wall            time.Duration // first write to last publish printed
	settle          time.Duration // last publish to Envoy on it and every send answered
	window          int
	first, last     []soakSample
	firstMid        int // publish index at the middle of each window
	lastMid         int
	lastBackend     string
	lastEDSPort     int       // inventory's endpoint port in Envoy's config dump
	envoyEDSVersion string    // Envoy's cluster.inventory.version_text at the end
	ackMS           []float64 // send-to-ACK latency of every ACK
}

func TestSoak(t *testing.T) {
	bin := envoytest.Require(t)
	n := soakPublishes(t)
	var results []soakResult
	for _, mode := range []protocol.Mode{protocol.SotW, protocol.Delta} {
		t.Run(mode.String(), func(t *testing.T) {
			results = append(results, runSoak(t, bin, mode, n))
		})
	}
	if len(results) > 0 {
		t.Log("\n" + soakTable(results))
	}
}

// soakStats are the Envoy subscription stats that carry the last label: in SotW with
// uniform versions every publish moves all four types; in delta only EDS moves (the
// endpoint is all that changes), and the other subscriptions stay on version 1.
func soakStats(mode protocol.Mode) (moving, still []string) {
	eds := "cluster." + resources.ClusterName + ".version_text"
	others := []string{
		"cluster_manager.cds.version_text",
		"listener_manager.lds.version_text",
		"http." + resources.StatPrefix + ".rds." + resources.RouteName + ".version_text",
	}
	if mode == protocol.SotW {
		return append([]string{eds}, others...), nil
	}
	return []string{eds}, others
}

func runSoak(t *testing.T, bin envoy.Binary, mode protocol.Mode, n int) soakResult {
	// Registered first, so it runs after every cleanup below: serve, Envoy, the backends
	// and their connections must all be gone when the soak is.
	testenv.VerifyNoLeaks(t)
	dir := t.TempDir()
	res := soakResult{mode: mode, publishes: n, sends: map[string]int{}}
	res.window = min(soakWindowMax, n/5)
	every := max(1, res.window/soakSamplesPerWindow)
	// Generous: a publish takes about 50 us (under a millisecond with -race); the budget
	// covers a busy 2-core machine, Envoy's start and the checks afterwards.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute+time.Duration(n)*50*time.Millisecond)
	defer cancel()

	var backends [2]*inventory.Backend
	for i, name := range []string{"v1", "v2"} {
		b, err := inventory.Start(name, 0, "")
		require.NoError(t, err)
		t.Cleanup(func() { _ = b.Stop(context.Background()) })
		backends[i] = b
	}
	// Publish i of n goes to backends[(n-i+1)%2]: the last one (i = n) goes to v2, which
	// differs from version 1's v1, so the final request proves the soak moved Envoy.
	target := func(i int) *inventory.Backend { return backends[(n-i+1)%2] }

	listenerPort, err := loopback.FreePort()
	require.NoError(t, err)
	t.Cleanup(func() { loopback.Release(listenerPort) })
	o := DefaultOptions()
	o.Mode = mode
	o.XDSAddr = loopback.Addr(0)
	o.InventoryPort = backends[0].Port()
	o.ListenerPort = listenerPort
	o.LogPath = filepath.Join(dir, "xds.log")

	out := newSoakOutput()
	inR, inW := io.Pipe()
	served := make(chan struct{})
	var serveErr error
	go func() {
		defer close(served)
		serveErr = Run(ctx, o, inR, out.writer("out"), out.writer("err"))
	}()
	stopServe := func() {
		_ = inW.Close() // end of input
		select {
		case <-served:
		case <-time.After(30 * time.Second):
			t.Errorf("serve did not stop at end of input; output tail:\n%s", out.tailText())
		}
	}
	t.Cleanup(func() { cancel(); stopServe() })
	out.waitVersion(t, 1, 10*time.Second, served)
	addr, _, _ := out.state()
	require.NotEmpty(t, addr, "serving line; output tail:\n%s", out.tailText())

	cfg, err := bootstrap.Render(mode, bootstrap.Params{XDSAddr: addr})
	require.NoError(t, err)
	bsPath := filepath.Join(dir, "bootstrap.yaml")
	require.NoError(t, os.WriteFile(bsPath, cfg, 0o644))
	proc, err := envoy.Start(ctx, envoy.Options{Binary: bin, ConfigPath: bsPath, LogPath: filepath.Join(dir, "envoy.log"), ExtraArgs: []string{"--concurrency", "1"}})
	require.NoError(t, err)
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		if err := proc.Stop(sctx); err != nil {
			t.Logf("stop envoy: %v", err)
		}
	})
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	require.NoError(t, proc.WaitReady(rctx), "Envoy ready; its log: %s", proc.LogPath())
	rcancel()

	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	backendVia := func() string {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+loopback.Addr(listenerPort)+resources.QuotePath+"?sku=soak", nil)
		if err != nil {
			return ""
		}
		resp, err := client.Do(req)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		var q inventory.Quote
		if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&q) != nil {
			return ""
		}
		return q.Backend
	}
	require.Eventually(t, func() bool { return backendVia() == backends[0].Name() }, 30*time.Second, 50*time.Millisecond,
		"version 1 serves %s through Envoy", backends[0].Name())

	// The soak. Version k+1 is the k-th publish.
	firstFrom, lastFrom := 1, n-res.window+1
	start := time.Now()
	for i := 1; i <= n; i++ {
		if _, err := fmt.Fprintf(inW, "port %d\n", target(i).Port()); err != nil {
			t.Fatalf("write publish %d: %v; output tail:\n%s", i, err, out.tailText())
		}
		out.waitVersion(t, i+1, 10*time.Second, served)
		switch {
		case i >= firstFrom && i < firstFrom+res.window && (i-firstFrom)%every == every-1:
			res.first = append(res.first, soakTakeSample(t))
		case i >= lastFrom && (i-lastFrom)%every == every-1:
			res.last = append(res.last, soakTakeSample(t))
		}
	}
	res.wall = time.Since(start)
	res.firstMid, res.lastMid = firstFrom+res.window/2, lastFrom+res.window/2
	last := strconv.Itoa(n + 1)
	lastBackend := target(n)

	// Envoy ends on the last version, and every send is answered. Both are read while
	// serve still runs: xds.log may end in a half-written line, which is left for the
	// next poll.
	//
	// SotW: every publish has a new label, so the server always sends the last one and
	// Envoy's version_text is the last label. Delta compares content, not labels: the
	// endpoint alternates between two ports, so the last state's endpoints are byte for
	// byte those of the state two publishes earlier. When Envoy's ACK of that earlier
	// state arrives after the last publish, the server has nothing to send (Envoy already
	// runs the last state's content) and version_text stays at the earlier label. So in
	// delta Envoy must run the last publish's EDS content (hash), under the label of the
	// last EDS send, which must carry that content.
	moving, still := soakStats(mode)
	logPath := o.LogPath
	var stats map[string]string
	var conv soakConvergence
	require.Eventually(t, func() bool {
		ev, _, err := xdslog.ReadFile(logPath)
		if err != nil || soakUnanswered(ev) != 0 {
			return false
		}
		conv = soakConverged(ev)
		if conv.lastPublish != last || conv.lastEDSSend == "" {
			return false
		}
		want := last
		if mode == protocol.Delta {
			if conv.lastEDSSendHash != conv.lastPublishEDSHash {
				return false // the last content is still to be sent
			}
			want = conv.lastEDSSend
		}
		s, err := proc.Stats(ctx)
		if err != nil {
			return false
		}
		stats = s
		for _, name := range moving {
			if s[name] != want {
				return false
			}
		}
		return true
	}, 60*time.Second, 100*time.Millisecond, "Envoy's %v reach version %s (or, in delta, the last EDS send carrying its content) and every send in xds.log is answered", moving, last)
	res.settle = time.Since(start) - res.wall
	res.envoyEDSVersion = stats[moving[0]]
	if mode == protocol.SotW {
		assert.Equal(t, last, conv.lastEDSSend, "SotW's last EDS send is the last label")
	}
	for _, name := range still {
		assert.Equal(t, "1", stats[name], "delta never re-sent %s, so Envoy stays on version 1", name)
	}

	// The data plane: the last backend answers through Envoy's listener, and the config
	// dump has its port.
	require.Eventually(t, func() bool { return backendVia() == lastBackend.Name() }, 30*time.Second, 50*time.Millisecond,
		"version %s serves %s through Envoy", last, lastBackend.Name())
	res.lastBackend = lastBackend.Name()
	dump, err := proc.ConfigDump(ctx, true)
	require.NoError(t, err)
	res.lastEDSPort = soakEDSPort(t, dump)
	assert.Equal(t, lastBackend.Port(), res.lastEDSPort, "Envoy's endpoint for %s is the last backend's", resources.ClusterName)

	// Stop serve (end of input) and read the whole log.
	stopServe()
	require.NoError(t, serveErr)
	_, published, errs := out.state()
	assert.Equal(t, n+1, published)
	assert.Empty(t, errs, "serve printed no error line")
	assert.Contains(t, out.tailText(), "out: stopping: end of input")

	ev, st, err := xdslog.ReadFile(logPath)
	require.NoError(t, err)
	assert.Zero(t, st.Skipped, "skipped lines in xds.log: %s", st.FirstSkip)
	type key struct {
		server int
		stream int64
		typ    string
		nonce  string
	}
	sends, answers := map[key]int{}, map[key]int{}
	var lastPublish xdslog.Event
	for _, e := range ev {
		k := key{e.Server, e.Stream, e.Type, e.Nonce}
		switch e.Event {
		case xdslog.EventPublish:
			res.logPublishes++
			lastPublish = e
		case xdslog.EventStreamOpen:
			res.streams++
		case xdslog.EventStreamClose:
			if assert.NotNil(t, e.Dropped, "stream_close %d has dropped", e.Stream) {
				assert.Zero(t, *e.Dropped, "stream %d closed with sends never answered", e.Stream)
			}
		case xdslog.EventSend:
			sends[k]++
			res.sends[e.Type]++
			res.sendsTotal++
		case xdslog.EventAck, xdslog.EventNack:
			answers[k]++
			if e.Event == xdslog.EventAck {
				res.acks++
				res.ackMS = append(res.ackMS, e.Latency())
			} else {
				res.nacks++
				t.Errorf("NACK of a valid state: %+v", e)
			}
		case xdslog.EventUnmatched, xdslog.EventRefused:
			t.Errorf("%s event: %+v", e.Event, e)
		}
	}
	assert.Equal(t, n+1, res.logPublishes, "publish events")
	assert.Equal(t, last, lastPublish.Version)
	assert.Equal(t, 1, res.streams, "Envoy kept one ADS stream for the whole soak")
	for k, c := range sends {
		assert.Equal(t, 1, c, "send %+v recorded once", k)
		assert.Equal(t, 1, answers[k], "send %+v answered exactly once", k)
	}
	for k := range answers {
		assert.Contains(t, sends, k, "ACK/NACK %+v answers a recorded send", k)
	}
	assert.Positive(t, res.sends["EDS"], "EDS was sent")
	assert.LessOrEqual(t, res.sends["EDS"], n+1, "at most one EDS send per publish (the SotW server coalesces)")

	// Flat figures.
	require.NotEmpty(t, res.first)
	require.NotEmpty(t, res.last)
	f, l := soakMedianSample(res.first), soakMedianSample(res.last)
	assert.LessOrEqual(t, l.goroutines, f.goroutines+soakMaxGoroutineGrowth, "goroutines stay flat (median of the first vs the last %d publishes)", res.window)
	assert.LessOrEqual(t, l.fds, f.fds+soakMaxFDGrowth, "open fds stay flat (median of the first vs the last %d publishes)", res.window)
	assert.LessOrEqual(t, l.heap, soakHeapFactor*f.heap+soakHeapSlack, "heap in use stays flat (median of the first vs the last %d publishes)", res.window)
	return res
}

// soakUnanswered counts sends with no ACK or NACK yet.
func soakUnanswered(ev []xdslog.Event) int {
	type key struct {
		server int
		stream int64
		typ    string
		nonce  string
	}
	open := map[key]bool{}
	for _, e := range ev {
		k := key{e.Server, e.Stream, e.Type, e.Nonce}
		switch e.Event {
		case xdslog.EventSend:
			open[k] = true
		case xdslog.EventAck, xdslog.EventNack:
			delete(open, k)
		}
	}
	return len(open)
}

// soakConvergence is where the log stands: the last publish and its EDS content, and the
// last EDS send and its content.
type soakConvergence struct {
	lastPublish, lastPublishEDSHash string
	lastEDSSend, lastEDSSendHash    string
}

func soakConverged(ev []xdslog.Event) soakConvergence {
	var c soakConvergence
	edsHash := func(rs xdslog.Resources) string {
		for _, r := range rs {
			if r.Name == resources.ClusterName {
				return r.Hash
			}
		}
		return ""
	}
	for _, e := range ev {
		switch {
		case e.Event == xdslog.EventPublish:
			c.lastPublish = e.Version
			var eds xdslog.Resources
			for _, r := range e.Resources {
				if r.Type == "EDS" {
					eds = append(eds, r)
				}
			}
			c.lastPublishEDSHash = edsHash(eds)
		case e.Event == xdslog.EventSend && e.Type == "EDS":
			c.lastEDSSend, c.lastEDSSendHash = e.Version, edsHash(e.Resources)
		}
	}
	return c
}

// soakEDSPort returns the endpoint port of cluster inventory in a
// /config_dump?include_eds. (Envoy's endpoint dump carries no version_info, in either
// mode; the subscription's version is in the stats.)
func soakEDSPort(t *testing.T, dump []byte) int {
	t.Helper()
	d, err := clientview.ParseEnvoyDump(dump)
	require.NoError(t, err)
	for _, e := range d.Entries {
		if e.Type != resources.EDS || e.Name != resources.ClusterName {
			continue
		}
		if len(e.Ports) == 0 {
			return 0
		}
		return e.Ports[len(e.Ports)-1]
	}
	t.Fatalf("no dynamic endpoint config for %s in the config dump", resources.ClusterName)
	return 0
}

// soakVersionNote is Envoy's final EDS version_text, marked when it is an earlier label
// with the last state's content (delta: see runSoak).
func soakVersionNote(r soakResult) string {
	if last := strconv.Itoa(r.publishes + 1); r.envoyEDSVersion != last {
		return r.envoyEDSVersion + " (" + last + "'s content)"
	}
	return r.envoyEDSVersion
}

func soakMedianSample(s []soakSample) soakSample {
	var heap []uint64
	var g, fd []int
	for _, x := range s {
		heap, g, fd = append(heap, x.heap), append(g, x.goroutines), append(fd, x.fds)
	}
	return soakSample{heap: soakMedian(heap), goroutines: soakMedian(g), fds: soakMedian(fd)}
}

// soakTable prints the figures in a stable layout: one table for the traffic, one for
// lab's own figures (medians of the first and the last window).
func soakTable(rs []soakResult) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODE\tPUBLISHES\tSENDS\tCDS/EDS/LDS/RDS\tACKS\tACK MS (MEDIAN/MAX)\tNACKS\tSTREAMS\tWALL\tPUBLISHES/S\tSETTLE\tENVOY EDS VERSION\tLAST BACKEND")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d/%d/%d/%d\t%d\t%.2f/%.2f\t%d\t%d\t%.1fs\t%.0f\t%dms\t%s\t%s (port %d)\n",
			r.mode, r.publishes, r.sendsTotal, r.sends["CDS"], r.sends["EDS"], r.sends["LDS"], r.sends["RDS"],
			r.acks, soakMedian(r.ackMS), slices.Max(r.ackMS), r.nacks, r.streams, r.wall.Seconds(), float64(r.publishes)/r.wall.Seconds(), r.settle.Milliseconds(),
			soakVersionNote(r), r.lastBackend, r.lastEDSPort)
	}
	_ = tw.Flush()
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODE\tFIGURE\tFIRST WINDOW\tLAST WINDOW\tBOUND\tGROWTH/PUBLISH\tSAMPLES")
	for _, r := range rs {
		if len(r.first) == 0 || len(r.last) == 0 {
			continue
		}
		f, l := soakMedianSample(r.first), soakMedianSample(r.last)
		span := float64(r.lastMid - r.firstMid)
		samples := fmt.Sprintf("%d+%d", len(r.first), len(r.last))
		mib := func(x uint64) string { return fmt.Sprintf("%.1f MiB", float64(x)/(1<<20)) }
		fmt.Fprintf(tw, "%s\theap in use\t%s\t%s\t<= %s\t%+.0f B\t%s\n", r.mode, mib(f.heap), mib(l.heap),
			mib(soakHeapFactor*f.heap+soakHeapSlack), (float64(l.heap)-float64(f.heap))/span, samples)
		fmt.Fprintf(tw, "%s\tgoroutines\t%d\t%d\t<= %d\t%+.4f\t%s\n", r.mode, f.goroutines, l.goroutines,
			f.goroutines+soakMaxGoroutineGrowth, float64(l.goroutines-f.goroutines)/span, samples)
		fmt.Fprintf(tw, "%s\topen fds\t%d\t%d\t<= %d\t%+.4f\t%s\n", r.mode, f.fds, l.fds,
			f.fds+soakMaxFDGrowth, float64(l.fds-f.fds)/span, samples)
	}
	_ = tw.Flush()
	if len(rs) > 0 {
		r := rs[0]
		fmt.Fprintf(&b, "windows: publishes 1-%d and %d-%d, medians of %d samples each\n", r.window, r.publishes-r.window+1, r.publishes, len(r.first))
	}
	return b.String()
}
