// Package gcpserver runs a control plane this project did not write: go-control-plane's
// own integration server (github.com/envoyproxy/go-control-plane/pkg/test/main),
// unchanged, built from the module cache at the version go.mod pins (v0.14.0).
//
// The server serves ADS (state of the world) or DELTA-ADS, pushes a new snapshot every
// few request batches, and checks each snapshot by sending HTTP requests through Envoy's
// listeners (127.0.0.1:base+i) to an upstream echo server. It decides by itself whether
// Envoy converged: "pass" per batch, exit code 0 after all its updates.
//
// Network caveat: the server is third-party code that this package does not patch, and
// it listens on all interfaces (":port") for its xDS, HTTP gateway and access-log
// servers. Everything the workbench itself starts (the upstream echo server here, Envoy's
// admin and listeners through the rewritten bootstrap) stays on 127.0.0.1.
package gcpserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xds-workbench/lab/experiments/childproc"
	"github.com/xds-workbench/lab/shared/loopback"
)

// Module and Package name what Build builds.
const (
	Module  = "github.com/envoyproxy/go-control-plane"
	Package = Module + "/pkg/test/main"
	// DefaultMessage is the server's default -message: the body it expects back from
	// the upstream through Envoy.
	DefaultMessage = "Default message"
)

// XDSFlag is the example server's -xds value: its own names for its protocols, which
// are not the workbench's protocol.Mode ("ads" is SotW over ADS).
type XDSFlag string

// The -xds values this package supports.
const (
	ModeADS      XDSFlag = "ads"
	ModeDeltaADS XDSFlag = "delta-ads"
)

// goTool finds the go command: on PATH (go test and go run put their own GOROOT/bin
// first on the PATH of what they start), else under $GOROOT.
func goTool() (string, error) {
	p, err := exec.LookPath("go")
	if err == nil {
		return p, nil
	}
	if root := os.Getenv("GOROOT"); root != "" {
		p = filepath.Join(root, "bin", "go")
		if _, statErr := os.Stat(p); statErr == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("find the go tool: not on PATH nor under $GOROOT: %w", err)
}

// built is the process's one build (BuildOnce), removed by RemoveBuilt.
var built struct {
	once     sync.Once
	dir, bin string
	err      error
}

// BuildOnce builds the server once per process, into a temporary directory (tests of
// several packages need it, each in its own process); RemoveBuilt removes it.
func BuildOnce(ctx context.Context) (string, error) {
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "lab-gcpserver-"); built.err != nil {
			return
		}
		built.bin, built.err = Build(ctx, built.dir)
	})
	return built.bin, built.err
}

// RemoveBuilt removes what BuildOnce built (a TestMain calls it after the tests).
func RemoveBuilt() {
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
}

// Build compiles the server into dir/gcp-test with the current toolchain, from this
// module (so at the go-control-plane version go.mod requires), and returns its path. It
// runs `go build` in the module root found above the working directory, so it needs
// this module's source tree and the module cache (tests have both).
func Build(ctx context.Context, dir string) (string, error) {
	gobin, err := goTool()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "gcp-test")
	stdout, stderr, err := childproc.OutputIn(ctx, moduleRoot(), gobin, "build", "-o", out, Package)
	if err != nil {
		return "", fmt.Errorf("go build %s: %w: %s", Package, err, strings.TrimSpace(string(append(stdout, stderr...))))
	}
	return out, nil
}

// moduleRoot is the directory of this module's go.mod when found from the working
// directory (tests run in their package directory), else "" (the working directory).
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// ModuleDir is the pinned go-control-plane module's directory in the module cache
// (`go list -m -f {{.Dir}}`), where its sample bootstraps are.
func ModuleDir(ctx context.Context) (string, error) {
	gobin, err := goTool()
	if err != nil {
		return "", err
	}
	out, stderr, err := childproc.OutputIn(ctx, moduleRoot(), gobin, "list", "-m", "-f", "{{.Dir}}", Module)
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w: %s", Module, err, strings.TrimSpace(string(stderr)))
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("go list -m %s: no directory (module not downloaded? run go mod download)", Module)
	}
	return dir, nil
}

// Options are the server's flags. Zero ports are refused: pick them with
// loopback.FreePort (and FreeBase for the listeners).
type Options struct {
	// Mode is -xds: ModeADS or ModeDeltaADS.
	Mode XDSFlag
	// Mux is -mux: EDS from a LinearCache behind a MuxCache.
	Mux bool
	// Port is -port, the xDS server (gRPC). GatewayPort is -gateway (REST gateway),
	// ALSPort is -als (access-log server): all three bound on all interfaces.
	Port, GatewayPort, ALSPort int
	// UpstreamPort is -upstream: the echo server the snapshot's endpoints point at
	// (127.0.0.1:UpstreamPort); StartUpstream serves it.
	UpstreamPort int
	// BasePort is -base: Envoy's listeners are 127.0.0.1:BasePort+i, i < Listeners().
	BasePort int
	// NodeID is -nodeID: the node the snapshots are set for; Envoy's node.id must match.
	NodeID string
	// Updates is -u (snapshots pushed), Requests is -r (request batches per snapshot).
	Updates, Requests int
	// Delay is -delay between batches (the server's default, 500 ms, when 0).
	Delay time.Duration
	// Listener counts per snapshot: -http, -scopedhttp, -tcp. -vhdshttp is always 0:
	// the server zeroes it outside DELTA (non-ADS) mode anyway.
	HTTPListeners, ScopedHTTPListeners, TCPListeners int
	// Clusters is -clusters (the server's default, 4, when 0).
	Clusters int
	// Message is -message, the upstream's reply (DefaultMessage when empty).
	Message string
	// Debug is -debug: the server logs every request and response it sees.
	Debug bool
}

// Listeners is how many listeners each snapshot has: ports BasePort..BasePort+n-1.
func (o Options) Listeners() int { return o.HTTPListeners + o.ScopedHTTPListeners + o.TCPListeners }

func (o Options) message() string {
	if o.Message == "" {
		return DefaultMessage
	}
	return o.Message
}

// Args is the server's command line for o.
func (o Options) Args() ([]string, error) {
	if o.Mode != ModeADS && o.Mode != ModeDeltaADS {
		return nil, fmt.Errorf("gcpserver: mode %q: want %q or %q", o.Mode, ModeADS, ModeDeltaADS)
	}
	for name, p := range map[string]int{"Port": o.Port, "GatewayPort": o.GatewayPort, "ALSPort": o.ALSPort, "UpstreamPort": o.UpstreamPort, "BasePort": o.BasePort} {
		if err := loopback.ValidatePort(p); err != nil {
			return nil, fmt.Errorf("gcpserver: %s: %w", name, err)
		}
	}
	if o.NodeID == "" {
		return nil, errors.New("gcpserver: no NodeID")
	}
	if o.Updates < 1 || o.Requests < 1 {
		return nil, fmt.Errorf("gcpserver: updates %d, requests %d: want at least 1 each", o.Updates, o.Requests)
	}
	if o.Listeners() < 1 {
		return nil, errors.New("gcpserver: no listeners (HTTPListeners+ScopedHTTPListeners+TCPListeners)")
	}
	args := []string{
		"-xds", string(o.Mode),
		"-port", strconv.Itoa(o.Port),
		"-gateway", strconv.Itoa(o.GatewayPort),
		"-als", strconv.Itoa(o.ALSPort),
		"-upstream", strconv.Itoa(o.UpstreamPort),
		"-base", strconv.Itoa(o.BasePort),
		"-nodeID", o.NodeID,
		"-u", strconv.Itoa(o.Updates),
		"-r", strconv.Itoa(o.Requests),
		"-http", strconv.Itoa(o.HTTPListeners),
		"-scopedhttp", strconv.Itoa(o.ScopedHTTPListeners),
		"-vhdshttp", "0",
		"-tcp", strconv.Itoa(o.TCPListeners),
		"-message", o.message(),
	}
	if o.Delay > 0 {
		args = append(args, "-delay", o.Delay.String())
	}
	if o.Clusters > 0 {
		args = append(args, "-clusters", strconv.Itoa(o.Clusters))
	}
	if o.Mux {
		args = append(args, "-mux")
	}
	if o.Debug {
		args = append(args, "-debug")
	}
	return args, nil
}

// Batch is one of the server's "request batch" lines: after each snapshot it sends
// Requests batches of one HTTP GET per listener; Pass is sticky within a snapshot (true
// once any batch of that snapshot had no failure).
type Batch struct {
	Update       int // index of the snapshot (v<Update>) the batch belongs to
	Index        int // batch index within the snapshot
	OK, Failed   int
	Pass         bool
	SnapshotName string // "v0", "v1", ...
}

var (
	batchRE  = regexp.MustCompile(`request batch (\d+), ok (\d+), failed (\d+), pass (true|false)`)
	updateRE = regexp.MustCompile(`update snapshot (v\d+)`)
)

// Passed is the line the server logs when every snapshot passed, just before exit 0.
func passedLine(mode XDSFlag) string { return "Test for " + string(mode) + " passed!" }

// Server is the running integration server. Its output (Go log lines on stderr) is
// captured line by line; Stop or Wait for it.
type Server struct {
	opts Options
	proc *childproc.Process

	mu      sync.Mutex
	lines   []string
	changed chan struct{} // closed and replaced on each new line and at exit

	exited chan struct{} // closed once the process was reaped and all output is read
	stop   sync.Once
}

// Start runs the server binary bin (from Build) with o and returns once it logs that
// its xDS server is listening. ctx bounds only that wait (10 s when it has no deadline).
func Start(ctx context.Context, bin string, o Options) (*Server, error) {
	args, err := o.Args()
	if err != nil {
		return nil, err
	}
	cmd := childproc.Command(bin, args...)
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start gcp server: pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	proc, err := childproc.Start(cmd)
	pw.Close() // the child holds its copy; EOF on pr when it exits
	if err != nil {
		pr.Close()
		return nil, fmt.Errorf("start gcp server %s: %w", bin, err)
	}
	s := &Server{opts: o, proc: proc, changed: make(chan struct{}), exited: make(chan struct{})}
	go s.read(pr)

	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	want := fmt.Sprintf("management server listening on %d", o.Port)
	if _, err := s.WaitLine(ctx, func(l string) bool { return strings.Contains(l, want) }); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("start gcp server: %w", err)
	}
	return s, nil
}

func (s *Server) read(r io.ReadCloser) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		s.mu.Lock()
		s.lines = append(s.lines, sc.Text())
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
	}
	// A line over 4 MiB ends the scan: drain the rest so the server never blocks on it.
	_, _ = io.Copy(io.Discard, r)
	// EOF: the process (and any child holding the pipe) is gone; wait for its status.
	<-s.proc.Exited()
	close(s.exited)
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// Options are the flags the server runs with.
func (s *Server) Options() Options { return s.opts }

// Addr is where the server's xDS listens, as a loopback address to dial (it binds all
// interfaces; the workbench dials 127.0.0.1).
func (s *Server) Addr() string { return loopback.Addr(s.opts.Port) }

// Lines is the server's output so far.
func (s *Server) Lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

// Output is the output so far as one string (for failure messages).
func (s *Server) Output() string { return strings.Join(s.Lines(), "\n") }

// Batches parses the request-batch lines so far.
func (s *Server) Batches() []Batch { return ParseBatches(s.Lines()) }

// ParseBatches finds the server's "update snapshot vN" and "request batch" lines.
func ParseBatches(lines []string) []Batch {
	var out []Batch
	update, name := -1, ""
	for _, l := range lines {
		if m := updateRE.FindStringSubmatch(l); m != nil {
			update++
			name = m[1]
			continue
		}
		m := batchRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		idx, _ := strconv.Atoi(m[1])
		ok, _ := strconv.Atoi(m[2])
		failed, _ := strconv.Atoi(m[3])
		out = append(out, Batch{Update: update, Index: idx, OK: ok, Failed: failed, Pass: m[4] == "true", SnapshotName: name})
	}
	return out
}

// PassedUpdates is how many snapshots had a passing batch (the server's success
// criterion per snapshot).
func PassedUpdates(batches []Batch) int {
	seen := map[int]bool{}
	for _, b := range batches {
		if b.Pass {
			seen[b.Update] = true
		}
	}
	return len(seen)
}

// WaitLine waits until a line of the output satisfies match and returns it, or fails
// when ctx ends or the server exits without such a line.
func (s *Server) WaitLine(ctx context.Context, match func(string) bool) (string, error) {
	next := 0
	for {
		s.mu.Lock()
		lines, changed := s.lines[next:], s.changed
		next = len(s.lines)
		s.mu.Unlock()
		for _, l := range lines {
			if match(l) {
				return l, nil
			}
		}
		select {
		case <-s.exited:
			// Lines read before the exit are all in; one last look.
			s.mu.Lock()
			rest := s.lines[next:]
			s.mu.Unlock()
			for _, l := range rest {
				if match(l) {
					return l, nil
				}
			}
			return "", fmt.Errorf("gcp server exited (%v) without the line wanted; output tail:\n%s", s.ExitErr(), tail(s.Lines(), 10))
		case <-ctx.Done():
			return "", fmt.Errorf("wait for gcp server line: %w; output tail:\n%s", ctx.Err(), tail(s.Lines(), 10))
		case <-changed:
		}
	}
}

// WaitPassed waits for the server's own verdict: it logs "Test for MODE passed!" and
// exits 0 once every snapshot had a passing request batch; it exits 1 when a snapshot
// had none ("failed all requests in a run N") or Envoy never sent a first request.
func (s *Server) WaitPassed(ctx context.Context) error {
	if err := s.Wait(ctx); err != nil {
		return err
	}
	want := passedLine(s.opts.Mode)
	for _, l := range s.Lines() {
		if strings.Contains(l, want) {
			return nil
		}
	}
	return fmt.Errorf("gcp server exited 0 without %q; output tail:\n%s", want, tail(s.Lines(), 10))
}

// Wait waits for the server to exit and returns its exit error (nil: exit 0), or ctx's.
func (s *Server) Wait(ctx context.Context) error {
	select {
	case <-s.exited:
	case <-ctx.Done():
		return fmt.Errorf("wait for gcp server to exit: %w; output tail:\n%s", ctx.Err(), tail(s.Lines(), 10))
	}
	if err := s.ExitErr(); err != nil {
		return fmt.Errorf("gcp server: %w; output tail:\n%s", err, tail(s.Lines(), 10))
	}
	return nil
}

// Exited is closed once the server has exited and its output is read.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// ExitErr is the exit error once Exited is closed (nil for exit 0 or while running).
func (s *Server) ExitErr() error {
	select {
	case <-s.exited:
	default:
		return nil
	}
	return s.proc.ExitErr()
}

// stopGrace is how long Stop waits after SIGTERM before it kills the server.
const stopGrace = 5 * time.Second

// Stop ends the server (SIGTERM, SIGKILL after 5 s) and waits for it. It is idempotent;
// a server that already exited is left as it is. It reports only a failure to stop.
func (s *Server) Stop() error {
	var err error
	s.stop.Do(func() {
		select {
		case <-s.exited:
			return
		default:
		}
		if _, err = s.proc.Stop(context.Background(), stopGrace); err != nil {
			err = fmt.Errorf("stop gcp server: %w", err)
			return
		}
		<-s.exited
	})
	return err
}

func tail(lines []string, n int) string {
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Upstream is the echo server the snapshots route to: the workbench's stand-in for
// go-control-plane's internal/upstream (same behaviour, every request answered with the
// message), but bound to 127.0.0.1.
type Upstream struct {
	srv  *http.Server
	done chan error
}

// StartUpstream serves message on 127.0.0.1:port.
func StartUpstream(port int, message string) (*Upstream, error) {
	l, err := loopback.Listen(port)
	if err != nil {
		return nil, fmt.Errorf("start upstream: %w", err)
	}
	u := &Upstream{
		srv: &http.Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = io.WriteString(w, message)
			}),
			ReadHeaderTimeout: 5 * time.Second,
		},
		done: make(chan error, 1),
	}
	go func() { u.done <- u.srv.Serve(l) }()
	return u, nil
}

// Close stops the upstream and waits for its server goroutine.
func (u *Upstream) Close() error {
	err := u.srv.Close()
	if serr := <-u.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return fmt.Errorf("upstream: %w", serr)
	}
	return err
}

// FreeBase returns a base port with n consecutive ports free on 127.0.0.1 for the
// server's listeners (BasePort+i): the base is a loopback.FreePort, the others are
// probed free but not reserved.
func FreeBase(n int) (int, error) {
	for attempt := 0; attempt < 50; attempt++ {
		base, err := loopback.FreePort()
		if err != nil {
			return 0, err
		}
		ok := true
		for i := 1; i < n && ok; i++ {
			l, err := net.Listen("tcp", loopback.Addr(base+i))
			if err != nil {
				ok = false
				break
			}
			_ = l.Close()
		}
		if ok {
			return base, nil
		}
		loopback.Release(base)
	}
	return 0, fmt.Errorf("find %d consecutive free ports: none after 50 tries", n)
}
