package tap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/serve"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/option"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// Options configures Run, the tap as `lab tap` runs it: a listener, the logs, and the
// steps from stdin or a window.
type Options struct {
	// Listen is where the client connects, 127.0.0.1:PORT (port 0 picks a free one).
	Listen string
	// Upstream is the control plane forwarded to, 127.0.0.1:PORT; it must be listening.
	Upstream string
	// LogPath is the xds.log appended to; the other protocol's streams, should they come,
	// are recorded beside it (SecondLogPath).
	LogPath string
	// Window starts a new step every Window, named w1, w2, ... (0: step names from in).
	Window time.Duration
	// MaxRecvMsgSize and MaxSendMsgSize bound requests and responses, as lab serve's do.
	MaxRecvMsgSize, MaxSendMsgSize int
	// DialTimeout bounds the start-up check that the upstream listens.
	DialTimeout time.Duration
	// Ready, when set, is told the address the tap serves on (tests).
	Ready func(addr string)
}

// DefaultOptions are Run's defaults; Listen and Upstream have none.
func DefaultOptions() Options {
	return Options{
		LogPath:        "xds.log",
		MaxRecvMsgSize: controlplane.DefaultMaxRecvMsgSize,
		MaxSendMsgSize: controlplane.DefaultMaxSendMsgSize,
		DialTimeout:    2 * time.Second,
	}
}

// WindowRange bounds Options.Window (when set).
var WindowRange = option.DurationRange{Min: time.Second, Max: 24 * time.Hour}

// The options a refusal names (option.Error.Option); cmd/lab maps them to its flags.
const (
	OptionListen          = "listen"
	OptionUpstream        = "upstream"
	OptionLog             = "log"
	OptionWindow          = "window"
	OptionMaxRecvMsgBytes = "max recv msg bytes"
	OptionMaxSendMsgBytes = "max send msg bytes"
)

func refuse(opt, value string, err error) error {
	return &option.Error{Option: opt, Value: value, Err: err}
}

// Validate checks every option before anything starts, and returns an *option.Error
// naming the first one refused; "localhost" becomes 127.0.0.1.
func (o *Options) Validate() error {
	if o.Listen == "" {
		return refuse(OptionListen, "", errors.New("not given (want "+loopback.Host+":PORT)"))
	}
	addr, err := loopback.Normalize(o.Listen, true)
	if err != nil {
		return refuse(OptionListen, o.Listen, err)
	}
	o.Listen = addr
	if o.Upstream == "" {
		return refuse(OptionUpstream, "", errors.New("not given (want "+loopback.Host+":PORT, the control plane's address)"))
	}
	up, err := loopback.Normalize(o.Upstream, false)
	if err != nil {
		return refuse(OptionUpstream, o.Upstream, err)
	}
	o.Upstream = up
	if o.Upstream == o.Listen {
		return refuse(OptionUpstream, o.Upstream, errors.New("the tap's own --listen address (want the control plane's)"))
	}
	if o.LogPath == "" {
		return refuse(OptionLog, "", errors.New("empty (want a file path)"))
	}
	if o.Window != 0 {
		if err := WindowRange.Check(o.Window); err != nil {
			return refuse(OptionWindow, option.ShortDuration(o.Window), err)
		}
	}
	for _, c := range []struct {
		opt string
		n   int
	}{{OptionMaxRecvMsgBytes, o.MaxRecvMsgSize}, {OptionMaxSendMsgBytes, o.MaxSendMsgSize}} {
		if r := serve.MsgBytesRange; c.n < r.Min || c.n > r.Max {
			return refuse(c.opt, strconv.Itoa(c.n), &r)
		}
	}
	return nil
}

// checkUpstream dials the upstream once: a wrong port is one line at start, not a
// stream of Unavailable errors in Envoy's log.
func (o *Options) checkUpstream() error {
	c, err := net.DialTimeout("tcp", o.Upstream, o.DialTimeout)
	if err != nil {
		why := err.Error()
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			why = oe.Err.Error()
		}
		return refuse(OptionUpstream, o.Upstream, fmt.Errorf("nothing answers there (%s) (want a running control plane's address)", why))
	}
	return c.Close()
}

// Run forwards until ctx ends or, unless o.Window is set, until in ends. Step names come
// from in (one a line) unless o.Window is set. Every option is checked (Validate) and the
// upstream dialled before anything is written.
func Run(ctx context.Context, o Options, in io.Reader, out, errOut io.Writer) (err error) {
	if err := o.Validate(); err != nil {
		return err
	}
	if err := o.checkUpstream(); err != nil {
		return err
	}
	port, err := loopback.ParseListenAddr(o.Listen)
	if err != nil {
		return refuse(OptionListen, o.Listen, err)
	}
	lis, err := loopback.Listen(port)
	if err != nil {
		return refuse(OptionListen, o.Listen, err)
	}
	logs := &logFiles{path: o.LogPath, upstream: o.Upstream, out: out}
	t, err := New(Config{Upstream: o.Upstream, Recorder: logs.recorder, MaxRecvMsgSize: o.MaxRecvMsgSize, MaxSendMsgSize: o.MaxSendMsgSize})
	if err != nil {
		_ = lis.Close()
		return err
	}
	served := make(chan error, 1)
	go func() { served <- t.Serve(lis) }()
	defer func() {
		// Stopping writes the stream_close lines, so the logs close after.
		t.Stop()
		<-served
		if e := logs.close(); e != nil && err == nil {
			err = e
		}
	}()
	addr := lis.Addr().String()
	fmt.Fprintf(out, "tapping ADS on %s -> %s; xds.log: %s; %s\n", addr, o.Upstream, absPath(o.LogPath), o.stepsSource())
	if o.Ready != nil {
		o.Ready(addr)
	}
	if o.Window > 0 {
		tick := time.NewTicker(o.Window)
		defer tick.Stop()
		windows(ctx, t, tick.C)
		return nil
	}
	stepsFrom(ctx, t, in, out, errOut)
	return nil
}

// stepsSource says where the steps come from, for the first line.
func (o *Options) stepsSource() string {
	if o.Window > 0 {
		return "a step every " + option.ShortDuration(o.Window) + " (w1, w2, ...)"
	}
	return "step names from stdin, one a line"
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// stepsFrom starts a step per line of in (a name seen before gets " #2", ...) until in
// ends or ctx does, as lab serve reads its commands.
func stepsFrom(ctx context.Context, t interface{ SetStep(string) }, in io.Reader, out, errOut io.Writer) {
	names := map[string]int{}
	serve.EachLine(ctx, in, out, errOut, func(text string) (stop bool) {
		name := strings.TrimSpace(text)
		if name == "" {
			return false
		}
		name = serve.UniqueStep(names, name)
		t.SetStep(name)
		fmt.Fprintf(out, "step %s\n", name)
		return false
	})
}

// windows starts step w1 now and w2, w3, ... at each tick until ctx ends.
func windows(ctx context.Context, t interface{ SetStep(string) }, ticks <-chan time.Time) {
	n := 1
	t.SetStep("w1")
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			n++
			t.SetStep("w" + strconv.Itoa(n))
		}
	}
}

// logFiles opens the tap's recorders: the first protocol seen records into path, the
// other (should it come) beside it (SecondLogPath).
type logFiles struct {
	path, upstream string
	mu             sync.Mutex
	files          []*os.File
	recs           []*xdslog.Recorder
	out            io.Writer
	err            error
}

// SecondLogPath is the log of the protocol that came second: xds.log -> xds.delta.log.
func SecondLogPath(path string, mode protocol.Mode) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "." + mode.String() + ext
}

func (l *logFiles) recorder(mode protocol.Mode) *xdslog.Recorder {
	l.mu.Lock()
	defer l.mu.Unlock()
	path := l.path
	if len(l.recs) > 0 {
		path = SecondLogPath(l.path, mode)
		fmt.Fprintf(l.out, "a %s stream: recorded in %s (one log holds one protocol)\n", mode, path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		if l.err == nil {
			l.err = fmt.Errorf("open xds.log: %w", err)
		}
		fmt.Fprintf(l.out, "error: %v (the %s streams are forwarded, not recorded)\n", err, mode)
		return nil
	}
	var before int64
	if fi, err := f.Stat(); err == nil {
		before = fi.Size()
	}
	rec := xdslog.NewRecorder(f, mode, xdslog.WithTap(l.upstream), xdslog.WithLogSize(before), xdslog.WithMaxLogBytes(serve.DefaultMaxLogSize))
	rec.BeginSession()
	if before > 0 {
		fmt.Fprintf(l.out, "%s already held %.1f MiB: this tap appends a new session; lab compare --session picks one\n", path, float64(before)/(1<<20))
	}
	l.files = append(l.files, f)
	l.recs = append(l.recs, rec)
	return rec
}

// close flushes and closes every log; the first error is returned.
func (l *logFiles) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.err
	for i, r := range l.recs {
		r.Flush()
		if e := r.Err(); e != nil && err == nil {
			err = e
		}
		if e := l.files[i].Close(); e != nil && err == nil {
			err = fmt.Errorf("close xds.log: %w", e)
		}
	}
	return err
}
