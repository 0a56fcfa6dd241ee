// Package inventory is the workbench's upstream: a tiny HTTP backend ("v1", "v2", ...)
// that answers GET /quote on 127.0.0.1 (and the same quote over gRPC, grpc.go) and logs
// one JSON line per request, so an experiment can prove which backend served a given
// x-request-id.
package inventory

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/scenario"
)

// QuotePath is the only path the backend serves.
const QuotePath = "/quote"

// nameRE keeps names safe in file names (the CLI's default log) and log lines.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Quote is the JSON body of a successful GET /quote.
type Quote struct {
	Backend   string `json:"backend"`
	SKU       string `json:"sku"`
	RequestID string `json:"request_id"`
	Port      int    `json:"port"`
}

// LogLine is one line of a backend's request log.
type LogLine struct {
	TS        time.Time `json:"ts"`
	Backend   string    `json:"backend"`
	Method    string    `json:"method"`
	Path      string    `json:"path"`
	SKU       string    `json:"sku"`
	RequestID string    `json:"request_id"`
	Status    int       `json:"status"`
	// Proto is the protocol the request came in ("HTTP/1.1", "HTTP/2.0").
	Proto string `json:"proto,omitempty"`
	// GRPCStatus is a gRPC call's status code ("OK", "NotFound"; "" for plain HTTP);
	// Status is then the HTTP status it stands for (HTTPStatus).
	GRPCStatus string `json:"grpc_status,omitempty"`
}

// Backend is a running inventory server.
type Backend struct {
	name    string
	port    int
	logPath string
	log     *os.File // unbuffered: each line reaches the file with one write
	logMu   sync.Mutex
	srv     *http.Server
	grpc    *grpc.Server // gRPC calls on the same port (grpc.go)
	count   atomic.Int64
	// conns counts the connections that carried a request (Connections).
	conns    atomic.Int64
	served   chan struct{}
	serveMu  sync.Mutex
	serveErr error

	stopOnce sync.Once
	stopErr  error
	bh       Behaviour
}

// Behaviour is how a backend treats its connections and answers: the knobs that show
// (or switch off) what old upstream connections do to traffic while a change lands.
type Behaviour struct {
	// Delay holds every answer this long: requests already routed to an endpoint that
	// EDS removes are still in flight when the update lands.
	Delay time.Duration
	// ConnectionClose answers every request with "Connection: close": HTTP/1.1 closes
	// the connection after the answer, HTTP/2 sends GOAWAY (net/http's HTTP/2 server
	// turns the header into a graceful shutdown), so no upstream connection is reused.
	ConnectionClose bool
	// IdleTimeout closes a keep-alive connection idle this long (0: never).
	IdleTimeout time.Duration
	// ConnDelay holds the first request of every connection this long, on top of Delay:
	// a stand-in for a handshake, so that a client that opens new connections (Envoy
	// after its connection pools are drained) pays for each in latency.
	ConnDelay time.Duration
	// HealthDelay holds every answer to HealthPath this long, on top of Delay: an active
	// health check's first round then takes this long, and a cluster that checks its
	// hosts warms until it completes (upstream_impl.cc, ClusterImplBase::onInitDone).
	HealthDelay time.Duration
}

// HealthPath is the path a scenario's health check asks (under QuotePath, so any
// backend answers it 200; HealthDelay holds it).
const HealthPath = QuotePath + "/health"

// MaxDelay bounds Behaviour.Delay: a backend for teaching, not a tarpit (a scenario's
// backend has the same bound).
const MaxDelay = scenario.MaxBackendDelay

// Check refuses a negative or absurd behaviour.
func (b Behaviour) Check() error {
	if b.Delay < 0 || b.Delay > MaxDelay {
		return fmt.Errorf("delay %s: want 0..%s", b.Delay, MaxDelay)
	}
	if b.ConnDelay < 0 || b.ConnDelay > MaxDelay {
		return fmt.Errorf("connection delay %s: want 0..%s", b.ConnDelay, MaxDelay)
	}
	if b.HealthDelay < 0 || b.HealthDelay > MaxDelay {
		return fmt.Errorf("health delay %s: want 0..%s", b.HealthDelay, MaxDelay)
	}
	if b.IdleTimeout < 0 {
		return fmt.Errorf("idle timeout %s: must not be negative", b.IdleTimeout)
	}
	return nil
}

// Start serves backend name on 127.0.0.1:port (0 picks a free port; see Port) and
// appends its request log to logPath ("" logs nothing).
func Start(name string, port int, logPath string) (*Backend, error) {
	return StartWith(name, port, logPath, Behaviour{})
}

// StartWith is Start with a Behaviour. The backend speaks HTTP/1.1 and HTTP/2 with prior
// knowledge (h2c) on the same port, whichever the client (Envoy's cluster) uses, and
// gRPC over that HTTP/2 (grpc.go) for a proxyless gRPC client.
func StartWith(name string, port int, logPath string, bh Behaviour) (*Backend, error) {
	if err := bh.Check(); err != nil {
		return nil, fmt.Errorf("inventory backend %q: %w", name, err)
	}
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("inventory backend name %q: use 1-64 letters, digits, '.', '_' or '-'", name)
	}
	// Bind first: a busy port must not leave an empty log file behind.
	ln, err := loopback.Listen(port)
	if err != nil {
		return nil, fmt.Errorf("inventory backend %q on port %d: %w", name, port, err)
	}
	var logFile *os.File
	if logPath != "" {
		f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("inventory backend %q: open log: %w", name, err)
		}
		logFile = f
	}
	b := &Backend{
		name:    name,
		port:    ln.Addr().(*net.TCPAddr).Port,
		logPath: logPath,
		log:     logFile,
		served:  make(chan struct{}),
		bh:      bh,
	}
	b.grpc = b.newGRPCServer()
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	b.srv = &http.Server{Handler: b, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: bh.IdleTimeout, Protocols: protocols,
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, new(atomic.Bool))
		}}
	go func() {
		err := b.srv.Serve(ln)
		if !errors.Is(err, http.ErrServerClosed) {
			b.serveMu.Lock()
			b.serveErr = fmt.Errorf("inventory backend %q: serve: %w", name, err)
			b.serveMu.Unlock()
		}
		close(b.served)
	}()
	return b, nil
}

// ServeHTTP answers /quote and every path under it (/quote/amber: scenarios route
// several paths) and logs every request, including refused ones.
func (b *Backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.holdNewConn(r.Context())
	if isGRPC(r) {
		b.serveGRPC(w, r)
		return
	}
	b.count.Add(1)
	id := r.Header.Get("x-request-id")
	sku := r.URL.Query().Get("sku")
	status := http.StatusOK
	w.Header().Set("Content-Type", "application/json")
	if id != "" {
		w.Header().Set("x-request-id", id)
	}
	if b.bh.ConnectionClose {
		w.Header().Set("Connection", "close")
	}
	b.hold(r.Context())
	if r.URL.Path == HealthPath {
		b.holdFor(r.Context(), b.bh.HealthDelay)
	}
	switch {
	case r.URL.Path != QuotePath && !strings.HasPrefix(r.URL.Path, QuotePath+"/"):
		status = http.StatusNotFound
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "not found", "backend": b.name})
	case r.Method != http.MethodGet:
		status = http.StatusMethodNotAllowed
		w.Header().Set("Allow", http.MethodGet)
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "method not allowed", "backend": b.name})
	default:
		_ = json.NewEncoder(w).Encode(Quote{Backend: b.name, SKU: sku, RequestID: id, Port: b.port})
	}
	b.writeLog(LogLine{
		TS: time.Now().UTC(), Backend: b.name, Method: r.Method, Path: r.URL.Path,
		SKU: sku, RequestID: id, Status: status, Proto: r.Proto,
	})
}

// Connections is how many connections have carried a request to this backend so far
// (each paid ConnDelay once).
func (b *Backend) Connections() int64 { return b.conns.Load() }

// connKey keys the per-connection flag ConnContext puts in every request's context:
// set once the connection's first request has been held (Behaviour.ConnDelay).
type connKey struct{}

// holdNewConn holds the first request of a connection ConnDelay (until ctx ends);
// with HTTP/2, the first stream to arrive is the one held.
func (b *Backend) holdNewConn(ctx context.Context) {
	if seen, ok := ctx.Value(connKey{}).(*atomic.Bool); !ok || seen.Swap(true) {
		return
	}
	b.conns.Add(1)
	if b.bh.ConnDelay <= 0 {
		return
	}
	t := time.NewTimer(b.bh.ConnDelay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// writeLog appends one line with a single Write, so a reader never sees half a line
// from this process and nothing waits in a buffer.
func (b *Backend) writeLog(l LogLine) {
	line, err := json.Marshal(l)
	if err != nil {
		return
	}
	line = append(line, '\n')
	b.logMu.Lock()
	defer b.logMu.Unlock()
	if b.log != nil { // nil once Stop closed it
		_, _ = b.log.Write(line)
	}
}

// Behaviour is how the backend was started.
func (b *Backend) Behaviour() Behaviour { return b.bh }

// Name is the backend's name, e.g. "v1".
func (b *Backend) Name() string { return b.name }

// Port is the bound port (the real one when Start was given 0).
func (b *Backend) Port() int { return b.port }

// Addr is "127.0.0.1:PORT".
func (b *Backend) Addr() string { return loopback.Addr(b.port) }

// LogPath is the request log ("" when not logging).
func (b *Backend) LogPath() string { return b.logPath }

// Count is the number of requests answered so far, on any path.
func (b *Backend) Count() int { return int(b.count.Load()) }

// Done is closed when the server stops serving (after Stop, or if Serve fails).
func (b *Backend) Done() <-chan struct{} { return b.served }

// Err is why serving stopped, nil after a normal Stop.
func (b *Backend) Err() error {
	b.serveMu.Lock()
	defer b.serveMu.Unlock()
	return b.serveErr
}

// Stop shuts down gracefully, letting in-flight requests finish until ctx ends, then
// closes the log. It is idempotent.
func (b *Backend) Stop(ctx context.Context) error {
	b.stopOnce.Do(func() {
		var errs []error
		if err := b.srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("inventory backend %q: shutdown: %w", b.name, err))
			// In-flight handlers may still write the log; force them off first.
			_ = b.srv.Close()
		}
		<-b.served
		// Its calls came in through ServeHTTP and are over; Stop ends what is left of
		// the server (it owns no listener).
		b.grpc.Stop()
		if b.log != nil {
			b.logMu.Lock()
			if err := b.log.Close(); err != nil {
				errs = append(errs, fmt.Errorf("inventory backend %q: close log: %w", b.name, err))
			}
			b.log = nil
			b.logMu.Unlock()
		}
		b.stopErr = errors.Join(errs...)
	})
	return b.stopErr
}

// Lookup finds requestID in the backend's log (the last line if it repeats). It reads the
// file, so it also sees lines from an earlier run that appended to the same log.
func (b *Backend) Lookup(requestID string) (LogLine, bool, error) {
	if b.logPath == "" {
		return LogLine{}, false, fmt.Errorf("inventory backend %q: started without a log", b.name)
	}
	return LookupFile(b.logPath, requestID)
}

// LookupFile finds requestID in a backend log file.
func LookupFile(path, requestID string) (LogLine, bool, error) {
	if requestID == "" {
		return LogLine{}, false, fmt.Errorf("inventory log lookup: empty request id")
	}
	var (
		found LogLine
		ok    bool
	)
	err := ScanFile(path, func(l LogLine) {
		if l.RequestID == requestID {
			found, ok = l, true
		}
	})
	if err != nil {
		return LogLine{}, false, err
	}
	return found, ok, nil
}

// ScanFile calls fn with every complete line of a backend log file, in order.
func ScanFile(path string, fn func(LogLine)) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("inventory log: %w", err)
	}
	// Only complete lines count; a line without its newline may still be in flight.
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var l LogLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return fmt.Errorf("inventory log %s line %d: %w", path, n, err)
		}
		fn(l)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("inventory log %s: %w", path, err)
	}
	return nil
}
