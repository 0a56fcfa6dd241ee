package envoy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xds-workbench/lab/experiments/childproc"
	"github.com/xds-workbench/lab/shared/loopback"
)

// Time limits for starting and stopping. Start also honours its context's deadline.
const (
	DefaultStartTimeout = 30 * time.Second
	quitGrace           = 10 * time.Second
	termGrace           = 5 * time.Second
	pollInterval        = 25 * time.Millisecond
)

// ErrNoStat is wrapped by Stat when Envoy has no stat of that name.
var ErrNoStat = errors.New("no such stat")

// Options say how to run Envoy.
type Options struct {
	Binary Binary
	// ConfigPath is the bootstrap (-c).
	ConfigPath string
	// LogPath receives Envoy's own log (--log-path). Empty: a file in a temporary
	// directory that Stop removes.
	LogPath string
	// ExtraArgs are appended to the command line (e.g. "--concurrency", "1").
	ExtraArgs []string
	// StopGrace is how long Stop waits for Envoy to exit after /quitquitquit before it
	// sends SIGTERM (10 s when 0). An Envoy holding 100,000 clusters takes longer than
	// that to tear them down.
	StopGrace time.Duration
}

// Process is a running Envoy. Stop (or Kill) it; it never outlives the parent process.
type Process struct {
	proc      *childproc.Process
	tmpDir    string
	logPath   string
	adminAddr string
	client    *http.Client
	output    *childproc.Tail
	exited    <-chan struct{}

	stopOnce  sync.Once
	stopErr   error
	stopGrace time.Duration
}

// Start runs Envoy and returns once its admin listener answers. Readiness (initial xDS
// fetched, /ready = LIVE) is a separate step: WaitReady. ctx bounds only the startup
// wait (DefaultStartTimeout when it has no deadline); the process lives until Stop/Kill.
func Start(ctx context.Context, opts Options) (*Process, error) {
	if opts.Binary.Path == "" {
		return nil, fmt.Errorf("start envoy: no binary (use envoy.Find)")
	}
	if _, err := os.Stat(opts.ConfigPath); err != nil {
		return nil, fmt.Errorf("start envoy: bootstrap: %w", err)
	}
	tmp, err := os.MkdirTemp("", "lab-envoy-")
	if err != nil {
		return nil, fmt.Errorf("start envoy: temp dir: %w", err)
	}
	logPath := opts.LogPath
	if logPath == "" {
		logPath = filepath.Join(tmp, "envoy.log")
	}
	adminPath := filepath.Join(tmp, "admin-address")
	args := []string{
		"-c", opts.ConfigPath,
		// No shared memory: several Envoys (or a restarted one) can run side by side.
		"--disable-hot-restart",
		"--admin-address-path", adminPath,
		"--log-path", logPath,
		"-l", "info",
		"--component-log-level", "config:debug,upstream:info",
		// Access-log lines reach the file within 100 ms instead of the 10 s default.
		"--file-flush-interval-msec", "100",
	}
	args = append(args, opts.ExtraArgs...)

	cmd := childproc.Command(opts.Binary.Path, args...)
	out := &childproc.Tail{Max: 16 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	// childproc: if the workbench dies (even by SIGKILL) the kernel kills Envoy too, and
	// a terminal's Ctrl-C does not reach Envoy before Stop can run.
	proc, err := childproc.Start(cmd)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("start envoy %s: %w", opts.Binary.Path, err)
	}
	p := &Process{
		proc:      proc,
		tmpDir:    tmp,
		logPath:   logPath,
		output:    out,
		exited:    proc.Exited(),
		stopGrace: opts.StopGrace,
		client: &http.Client{
			Timeout: 10 * time.Second,
			// Never route admin calls through an HTTP proxy from the environment.
			Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		},
	}

	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultStartTimeout)
		defer cancel()
	}
	if err := p.waitAdmin(ctx, adminPath); err != nil {
		_ = p.Kill()
		<-p.exited
		err = fmt.Errorf("start envoy: %w%s", err, p.diagnostics())
		p.cleanup()
		return nil, err
	}
	return p, nil
}

// waitAdmin polls until Envoy has written its admin address and the admin answers HTTP.
func (p *Process) waitAdmin(ctx context.Context, adminPath string) error {
	var last error
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("envoy exited during startup: %v", p.proc.ExitErr())
		default:
		}
		if addr, err := readAdminAddr(adminPath); err != nil {
			last = err
		} else if err := p.ping(ctx, addr); err != nil {
			last = err
		} else {
			p.adminAddr = addr
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("admin not reachable: %w (last: %v)", ctx.Err(), last)
		case <-p.exited:
		case <-time.After(pollInterval):
		}
	}
}

func readAdminAddr(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("admin address file: %w", err)
	}
	addr := strings.TrimSpace(string(b))
	if _, _, err := loopback.ParseAddr(addr); err != nil {
		return "", fmt.Errorf("admin address file: %w", err)
	}
	return addr, nil
}

// ping succeeds on any HTTP answer from /ready: 503 before initialization still proves
// the admin listener is up.
func (p *Process) ping(ctx context.Context, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/ready", nil)
	if err != nil {
		return fmt.Errorf("build /ready request: %w", err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("GET /ready: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil
}

// WaitReady polls /ready until Envoy reports LIVE (HTTP 200), i.e. its initial xDS
// fetches are done, or ctx ends.
func (p *Process) WaitReady(ctx context.Context) error {
	var last string
	for {
		code, body, err := p.get(ctx, "/ready")
		switch {
		case err != nil && ctx.Err() != nil && last != "":
			// The deadline cut this request short; the previous answer says more.
		case err != nil:
			last = err.Error()
		case code == http.StatusOK:
			return nil
		default:
			last = fmt.Sprintf("HTTP %d %s", code, strings.TrimSpace(string(body)))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("envoy not ready: %w (last /ready: %s)", ctx.Err(), last)
		case <-p.exited:
			return fmt.Errorf("envoy exited before ready: %v%s", p.proc.ExitErr(), p.diagnostics())
		case <-time.After(pollInterval):
		}
	}
}

// AdminAddr is the admin listener, "127.0.0.1:PORT".
func (p *Process) AdminAddr() string { return p.adminAddr }

// Pid is Envoy's process id.
func (p *Process) Pid() int { return p.proc.Pid() }

// LogPath is where Envoy writes its own log.
func (p *Process) LogPath() string { return p.logPath }

// Exited is closed once Envoy has exited and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitErr is the exit status from Wait (nil for exit 0); meaningful once Exited is closed.
func (p *Process) ExitErr() error { return p.proc.ExitErr() }

// get performs one admin GET and returns status and body.
func (p *Process) get(ctx context.Context, pathAndQuery string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.adminAddr+pathAndQuery, nil)
	if err != nil {
		return 0, nil, fmt.Errorf("build admin request %s: %w", pathAndQuery, err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("admin GET %s: %w", pathAndQuery, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("admin GET %s: read body: %w", pathAndQuery, err)
	}
	return resp.StatusCode, body, nil
}

// getOK is get that treats any status but 200 as an error.
func (p *Process) getOK(ctx context.Context, pathAndQuery string) ([]byte, error) {
	code, body, err := p.get(ctx, pathAndQuery)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("admin GET %s: HTTP %d: %s", pathAndQuery, code, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// Stats reads /stats. Counters and gauges map to their decimal value, text readouts
// (e.g. cluster_manager.cds.version_text) to their unquoted text, histograms to Envoy's
// summary line.
func (p *Process) Stats(ctx context.Context) (map[string]string, error) {
	body, err := p.getOK(ctx, "/stats")
	if err != nil {
		return nil, err
	}
	return ParseStats(body), nil
}

// Stat reads one stat by exact name; a missing name wraps ErrNoStat.
func (p *Process) Stat(ctx context.Context, name string) (string, error) {
	// filter is an RE2 regex; anchor it so "update_attempt" does not match its neighbours.
	q := url.Values{"filter": {"^" + regexp.QuoteMeta(name) + "$"}}
	body, err := p.getOK(ctx, "/stats?"+q.Encode())
	if err != nil {
		return "", err
	}
	v, ok := ParseStats(body)[name]
	if !ok {
		return "", fmt.Errorf("stat %q: %w", name, ErrNoStat)
	}
	return v, nil
}

// StatInt reads a counter or gauge as an integer.
func (p *Process) StatInt(ctx context.Context, name string) (int64, error) {
	v, err := p.Stat(ctx, name)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stat %q = %q is not an integer: %w", name, v, err)
	}
	return n, nil
}

// ParseStats parses the /stats text format, one "name: value" per line.
func ParseStats(body []byte) map[string]string {
	stats := make(map[string]string)
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			// A readout with an empty value still has ": " (`x: ""`); anything else is noise.
			continue
		}
		// Text readouts are printed in double quotes.
		if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
			value = value[1 : len(value)-1]
		}
		stats[name] = value
	}
	return stats
}

// ConfigDump returns /config_dump as JSON; includeEDS adds the endpoint configs.
func (p *Process) ConfigDump(ctx context.Context, includeEDS bool) ([]byte, error) {
	path := "/config_dump"
	if includeEDS {
		path += "?include_eds"
	}
	body, err := p.getOK(ctx, path)
	if err != nil {
		return nil, err
	}
	if !json.Valid(body) {
		return nil, fmt.Errorf("admin GET %s: body is not JSON", path)
	}
	return body, nil
}

// Stop shuts Envoy down and returns once it has exited: POST /quitquitquit, then SIGTERM,
// then SIGKILL, each after a grace period (shortened when ctx ends). It is idempotent and
// safe after Kill. The error says when Envoy had to be killed.
func (p *Process) Stop(ctx context.Context) error {
	p.stopOnce.Do(func() { p.stopErr = p.stop(ctx) })
	return p.stopErr
}

func (p *Process) stop(ctx context.Context) error {
	defer p.cleanup()
	if p.waitExit(ctx, 0) {
		return nil
	}
	grace := p.stopGrace
	if grace <= 0 {
		grace = quitGrace
	}
	hadWorkers := p.hasWorkers()
	accepted := p.quit(ctx)
	if p.waitExit(ctx, grace) {
		return nil
	}
	// Looked at before SIGTERM, which a main thread already out of its loop ignores.
	began := accepted || hadWorkers && !p.hasWorkers()
	if killed, err := p.proc.Stop(ctx, termGrace); err != nil {
		return fmt.Errorf("stop envoy: %w", err)
	} else if !killed {
		return nil
	}
	return &SlowExitError{Pid: p.Pid(), ShutdownBegan: began, Grace: grace}
}

// hasWorkers reports whether Envoy runs worker threads (named "wrk:worker_N"). They
// start once its initial config is in, and InstanceImpl::terminate stops them
// (ListenerManager::stopWorkers) after the main dispatch loop exits: workers seen before
// /quitquitquit and gone after it mean Envoy is shutting down. The 200 of /quitquitquit
// is no proof either way: the loop may exit before the answer is written.
func (p *Process) hasWorkers() bool {
	dir := fmt.Sprintf("/proc/%d/task", p.Pid())
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, t := range tasks {
		comm, err := os.ReadFile(filepath.Join(dir, t.Name(), "comm"))
		if err == nil && strings.HasPrefix(string(comm), "wrk:") {
			return true
		}
	}
	return false
}

// quit asks Envoy to shut down (POST /quitquitquit, which lets it flush its access logs)
// and reports whether it said yes: HTTP 200 means its shutdown began. The request may
// fail as Envoy exits.
func (p *Process) quit(ctx context.Context) bool {
	qctx, cancel := context.WithTimeout(ctx, quitGrace)
	defer cancel()
	req, err := http.NewRequestWithContext(qctx, http.MethodPost, "http://"+p.adminAddr+"/quitquitquit", nil)
	if err != nil {
		return false
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// SlowExitError is Stop's error when Envoy had to be killed. ShutdownBegan tells the two
// cases apart: Envoy had begun to shut down (it answered /quitquitquit with 200, or its
// workers were gone: workersStopped) and was still tearing down after Grace and SIGTERM
// (a SotW Envoy with many clusters: docs/performance.md, "Why SotW Envoys take long to
// exit"), or nothing shows that it ever began.
type SlowExitError struct {
	Pid           int
	ShutdownBegan bool
	Grace         time.Duration
}

func (e *SlowExitError) Error() string {
	if e.ShutdownBegan {
		return fmt.Sprintf("stop envoy pid %d: began to shut down but was still tearing down %s after /quitquitquit (and %s after SIGTERM), killed",
			e.Pid, e.Grace, termGrace)
	}
	return fmt.Sprintf("stop envoy pid %d: ignored /quitquitquit and SIGTERM, killed", e.Pid)
}

// waitExit waits up to grace (or until ctx ends) and reports whether Envoy has exited.
func (p *Process) waitExit(ctx context.Context, grace time.Duration) bool {
	return p.proc.WaitExit(ctx, grace)
}

// Kill sends SIGKILL without waiting (fault injection); watch Exited for the exit.
func (p *Process) Kill() error {
	if err := p.proc.Kill(); err != nil {
		return fmt.Errorf("envoy: %w", err)
	}
	return nil
}

// cleanup removes the temporary directory: the admin address file and, when
// Options.LogPath was empty, the default log. Callers who want the log pass LogPath.
func (p *Process) cleanup() {
	_ = os.RemoveAll(p.tmpDir)
}

// diagnostics is a short tail of Envoy's output and log, appended to startup errors.
func (p *Process) diagnostics() string {
	var parts []string
	if s := strings.TrimSpace(p.output.String()); s != "" {
		parts = append(parts, "output: "+tailLines(s, 5))
	}
	if b, err := os.ReadFile(p.logPath); err == nil {
		if s := strings.TrimSpace(string(b)); s != "" {
			parts = append(parts, "log: "+tailLines(s, 5))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "\n" + strings.Join(parts, "\n")
}

func tailLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// CPUTime is Envoy's user+system CPU time so far, from /proc/PID/stat.
func (p *Process) CPUTime() (time.Duration, error) {
	if p.waitExit(context.Background(), 0) {
		return 0, fmt.Errorf("cpu time: envoy pid %d has exited", p.Pid())
	}
	return childproc.StatCPU(p.Pid())
}

// RSS is Envoy's resident set size in bytes, from VmRSS in /proc/PID/status.
func (p *Process) RSS() (int64, error) {
	if p.waitExit(context.Background(), 0) {
		return 0, fmt.Errorf("rss: envoy pid %d has exited", p.Pid())
	}
	return childproc.RSS(p.Pid())
}
