package inventory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/loopback"
)

var client = &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 5 * time.Second}

func start(t *testing.T, name string, logPath string) *Backend {
	t.Helper()
	b, err := Start(name, 0, logPath)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Stop(context.Background()) })
	return b
}

func do(t *testing.T, method, url, requestID string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	if requestID != "" {
		req.Header.Set("x-request-id", requestID)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body, resp.Header
}

func TestQuoteAndLog(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "v1.log")
	b := start(t, "v1", logPath)
	assert.Equal(t, "v1", b.Name())
	assert.Positive(t, b.Port())
	assert.Equal(t, loopback.Addr(b.Port()), b.Addr())
	before := time.Now().UTC()

	code, body, hdr := do(t, http.MethodGet, "http://"+b.Addr()+"/quote?sku=paper", "req-1")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "application/json", hdr.Get("Content-Type"))
	assert.Equal(t, "req-1", hdr.Get("x-request-id"))
	var q Quote
	require.NoError(t, json.Unmarshal(body, &q))
	assert.Equal(t, Quote{Backend: "v1", SKU: "paper", RequestID: "req-1", Port: b.Port()}, q)
	assert.JSONEq(t, fmt.Sprintf(`{"backend":"v1","sku":"paper","request_id":"req-1","port":%d}`, b.Port()), string(body))

	code, _, _ = do(t, http.MethodGet, "http://"+b.Addr()+"/other", "req-2")
	assert.Equal(t, http.StatusNotFound, code)
	code, _, hdr = do(t, http.MethodPost, "http://"+b.Addr()+"/quote?sku=pen", "req-3")
	assert.Equal(t, http.StatusMethodNotAllowed, code)
	assert.Equal(t, "GET", hdr.Get("Allow"))
	assert.Equal(t, 3, b.Count())

	// The log is written before the response completes, so no polling is needed.
	l, ok, err := b.Lookup("req-1")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, LogLine{TS: l.TS, Backend: "v1", Method: "GET", Path: "/quote", SKU: "paper", RequestID: "req-1", Status: 200, Proto: "HTTP/1.1"}, l)
	assert.False(t, l.TS.Before(before.Add(-time.Second)), "timestamp is now-ish")

	l, ok, err = b.Lookup("req-2")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 404, l.Status)
	assert.Equal(t, "/other", l.Path)
	l, ok, err = b.Lookup("req-3")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 405, l.Status)
	assert.Equal(t, "POST", l.Method)

	_, ok, err = b.Lookup("never-sent")
	require.NoError(t, err)
	assert.False(t, ok)
	_, _, err = b.Lookup("")
	assert.Error(t, err)

	// Raw format: one JSON object per line with RFC 3339 nano timestamps.
	raw, err := os.ReadFile(logPath)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	require.Len(t, lines, 3)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &m))
	assert.Equal(t, []string{"backend", "method", "path", "proto", "request_id", "sku", "status", "ts"}, slices.Sorted(maps.Keys(m)))
	_, err = time.Parse(time.RFC3339Nano, m["ts"].(string))
	assert.NoError(t, err)
}

func TestConcurrentRequestsLogWholeLines(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "v2.log")
	b := start(t, "v2", logPath)
	const n = 50
	// No keep-alive: racing dials would leave never-used connections that make the
	// graceful Stop in Cleanup wait out net/http's 5 s grace for new connections.
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}, Timeout: 5 * time.Second}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Get("http://" + b.Addr() + "/quote?sku=s" + strconv.Itoa(i))
			if assert.NoError(t, err) {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				assert.Equal(t, http.StatusOK, resp.StatusCode)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, n, b.Count())
	raw, err := os.ReadFile(logPath)
	require.NoError(t, err)
	lines := bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
	require.Len(t, lines, n)
	for _, line := range lines {
		var l LogLine
		require.NoError(t, json.Unmarshal(line, &l), "line %q", line)
		assert.Equal(t, "v2", l.Backend)
	}
}

func TestPortInUseNamesThePort(t *testing.T) {
	b := start(t, "v1", "")
	_, err := Start("v2", b.Port(), "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), strconv.Itoa(b.Port()))
	assert.Contains(t, err.Error(), "v2")
}

func TestBadInputs(t *testing.T) {
	_, err := Start("", 0, "")
	assert.ErrorContains(t, err, "name")
	_, err = Start("../x", 0, "")
	assert.ErrorContains(t, err, "name")
	_, err = Start("v1", 70000, "")
	assert.ErrorContains(t, err, "70000")
	_, err = Start("v1", 0, filepath.Join(t.TempDir(), "no-such-dir", "v1.log"))
	assert.ErrorContains(t, err, "open log")

	b := start(t, "v1", "")
	_, _, err = b.Lookup("x")
	assert.ErrorContains(t, err, "without a log")
}

func TestStopIsGracefulAndIdempotent(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "v1.log")
	b, err := Start("v1", 0, logPath)
	require.NoError(t, err)
	code, _, _ := do(t, http.MethodGet, "http://"+b.Addr()+"/quote?sku=paper", "before-stop")
	require.Equal(t, http.StatusOK, code)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, b.Stop(ctx))
	require.NoError(t, b.Stop(ctx), "second Stop")
	select {
	case <-b.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
	assert.NoError(t, b.Err())
	_, err = client.Get("http://" + b.Addr() + "/quote")
	assert.Error(t, err, "nothing listens after Stop")

	// The log outlives the server, and a restart on the same port appends to it.
	again, err := Start("v1", b.Port(), logPath)
	require.NoError(t, err)
	t.Cleanup(func() { _ = again.Stop(context.Background()) })
	code, _, _ = do(t, http.MethodGet, "http://"+again.Addr()+"/quote?sku=pen", "after-restart")
	require.Equal(t, http.StatusOK, code)
	for _, id := range []string{"before-stop", "after-restart"} {
		_, ok, err := again.Lookup(id)
		require.NoError(t, err)
		assert.True(t, ok, id)
	}
}

func TestLookupIgnoresUnfinishedLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	require.NoError(t, os.WriteFile(path, []byte(`{"request_id":"a","status":200}`+"\n"+`{"request_id":"b"`), 0o644))
	_, ok, err := LookupFile(path, "a")
	require.NoError(t, err)
	assert.True(t, ok)
	_, ok, err = LookupFile(path, "b")
	require.NoError(t, err)
	assert.False(t, ok)

	require.NoError(t, os.WriteFile(path, []byte("not json\n"), 0o644))
	_, _, err = LookupFile(path, "a")
	assert.ErrorContains(t, err, "line 1")
}

// dialCounter is a client that counts the connections it opens (HTTP/1.1 keep-alive, or
// HTTP/2 with prior knowledge when h2).
func dialCounter(h2 bool) (*http.Client, *atomic.Int64) {
	var dials atomic.Int64
	p := new(http.Protocols)
	if h2 {
		p.SetUnencryptedHTTP2(true)
	} else {
		p.SetHTTP1(true)
	}
	d := &net.Dialer{Timeout: 2 * time.Second}
	tr := &http.Transport{Protocols: p, MaxConnsPerHost: 1, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}}
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}, &dials
}

func get(t *testing.T, c *http.Client, url string) *http.Response {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return resp
}

// TestBehaviourConnections: a plain backend keeps one connection for every request, in
// HTTP/1.1 and in HTTP/2; with ConnectionClose it answers "Connection: close" (HTTP/1.1)
// or GOAWAY (HTTP/2), so the client has to open new connections; with IdleTimeout it
// closes an idle connection by itself.
func TestBehaviourConnections(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprint("h2=", h2), func(t *testing.T) {
			plain, err := Start("plain", 0, "")
			require.NoError(t, err)
			t.Cleanup(func() { _ = plain.Stop(context.Background()) })
			c, dials := dialCounter(h2)
			for range 5 {
				resp := get(t, c, "http://"+plain.Addr()+QuotePath)
				assert.Equal(t, h2, resp.ProtoMajor == 2, "the backend speaks what the client asks")
			}
			assert.Equal(t, int64(1), dials.Load(), "keep-alive: one connection for five requests")

			closing, err := StartWith("closing", 0, "", Behaviour{ConnectionClose: true})
			require.NoError(t, err)
			t.Cleanup(func() { _ = closing.Stop(context.Background()) })
			c, dials = dialCounter(h2)
			resp := get(t, c, "http://"+closing.Addr()+QuotePath)
			if !h2 {
				assert.True(t, resp.Close, "HTTP/1.1: the answer says Connection: close")
			}
			// HTTP/2's GOAWAY reaches the client's read loop on its own time; wait for the
			// client to need a new connection.
			require.Eventually(t, func() bool {
				get(t, c, "http://"+closing.Addr()+QuotePath)
				return dials.Load() >= 2
			}, 5*time.Second, 10*time.Millisecond, "the client had to open a new connection")

			idle, err := StartWith("idle", 0, "", Behaviour{IdleTimeout: 50 * time.Millisecond})
			require.NoError(t, err)
			t.Cleanup(func() { _ = idle.Stop(context.Background()) })
			c, dials = dialCounter(h2)
			get(t, c, "http://"+idle.Addr()+QuotePath)
			require.Eventually(t, func() bool {
				get(t, c, "http://"+idle.Addr()+QuotePath)
				return dials.Load() >= 2
			}, 5*time.Second, 200*time.Millisecond, "an idle connection was closed by the backend")
		})
	}
}

// TestBehaviourDelay: an answer is held at least Delay; a bad behaviour is refused.
func TestBehaviourDelay(t *testing.T) {
	b, err := StartWith("slow", 0, "", Behaviour{Delay: 80 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Stop(context.Background()) })
	c, _ := dialCounter(false)
	began := time.Now()
	get(t, c, "http://"+b.Addr()+QuotePath)
	assert.GreaterOrEqual(t, time.Since(began), 80*time.Millisecond)
	_, err = StartWith("bad", 0, "", Behaviour{Delay: -time.Second})
	assert.ErrorContains(t, err, `inventory backend "bad": delay -1s`)
	_, err = StartWith("bad", 0, "", Behaviour{Delay: time.Hour})
	assert.ErrorContains(t, err, "want 0..30s")
}

// TestConnDelay: the first request of each connection is held ConnDelay, the next ones
// on the same connection are not.
func TestConnDelay(t *testing.T) {
	const cost = 150 * time.Millisecond
	b, err := StartWith("v1", 0, "", Behaviour{ConnDelay: cost})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Stop(context.Background()) })
	timed := func(c *http.Client) time.Duration {
		t0 := time.Now()
		resp, err := c.Get("http://" + b.Addr() + QuotePath)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return time.Since(t0)
	}
	for range 2 { // two connections, each paying once
		c := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1}}
		assert.GreaterOrEqual(t, timed(c), cost, "first request on a connection")
		assert.Less(t, timed(c), cost, "second request on the same connection")
		c.CloseIdleConnections()
	}
	assert.Equal(t, int64(2), b.Connections())
	assert.Error(t, Behaviour{ConnDelay: -time.Second}.Check())
}

// TestHealthDelay: an answer to HealthPath is held HealthDelay (and answered 200), one to
// QuotePath is not; a bad health delay is refused.
func TestHealthDelay(t *testing.T) {
	const d = 150 * time.Millisecond
	b, err := StartWith("v1", 0, "", Behaviour{HealthDelay: d})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Stop(context.Background()) })
	c, _ := dialCounter(false)
	began := time.Now()
	get(t, c, "http://"+b.Addr()+QuotePath)
	assert.Less(t, time.Since(began), d, "the quote path is not held")
	began = time.Now()
	get(t, c, "http://"+b.Addr()+HealthPath)
	assert.GreaterOrEqual(t, time.Since(began), d)
	_, err = StartWith("bad", 0, "", Behaviour{HealthDelay: -time.Second})
	assert.ErrorContains(t, err, "health delay -1s")
}
