package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/serve"
	"github.com/xds-workbench/lab/experiments/tap"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// tapOptions are the flags of `lab tap`.
type tapOptions struct {
	listen   string
	upstream string
	logPath  string
	// window starts a new step every window, named w1, w2, ... (0: steps from stdin).
	window time.Duration
	// maxRecv and maxSend bound requests and responses, as lab serve's flags do.
	maxRecv, maxSend int
	// dialTimeout bounds the start-up check that the upstream listens. Not a flag.
	dialTimeout time.Duration
	// ready is told the address the tap serves on (tests; not a flag).
	ready func(addr string)
}

func defaultTapOptions() tapOptions {
	return tapOptions{
		logPath:     "xds.log",
		maxRecv:     controlplane.DefaultMaxRecvMsgSize,
		maxSend:     controlplane.DefaultMaxSendMsgSize,
		dialTimeout: 2 * time.Second,
	}
}

// tapWindowRange bounds --window.
var tapWindowRange = durationRange{time.Second, 24 * time.Hour}

func newTapCmd() *cobra.Command {
	o := defaultTapOptions()
	cmd := &cobra.Command{
		Use:   "tap",
		Short: "Record the ADS exchanges between Envoy and any control plane (a transparent proxy)",
		Long: `tap is a transparent ADS proxy: point Envoy's bootstrap at --listen instead of its control
plane (lab bootstrap --xds-addr LISTEN, or edit the xds cluster's address), and tap opens
one stream to --upstream per stream Envoy opens, SotW or delta as Envoy asks, and forwards
every message both ways byte for byte. It records the streams into xds.log as lab serve
does (requests with their classification, sends with per-resource content hashes, ACKs,
NACKs, stale and unmatched requests, the node ID), so lab compare reads a tap log as it
reads a run. It cannot see the upstream's state: a tap log has no publish events, and its
session line says so.

Steps: each line on stdin starts a step of that name, and end of input stops the tap (as
it stops lab serve: a parent that dies closes its end of the pipe); --window D starts one
every D instead, named w1, w2, ..., so two taps can be aligned, and stdin is not read.
Stop with SIGINT or SIGTERM (or, without --window, end of input).

When the upstream ends a stream, Envoy's stream is ended with the upstream's status (it
reconnects and backs off as with the real server); a message tap cannot decode is
forwarded unchanged and recorded as "undecodable". The log is appended to, each start
with a new session line. A log holds one protocol: should streams of the other protocol
come, they are recorded beside it (xds.log -> xds.delta.log).

Both addresses are 127.0.0.1; the upstream must be listening when tap starts.`,
		Example: `  # the workbench's control plane on 18000, the tap on 18100, Envoy on the tap
  lab serve --mode sotw &
  lab tap --listen 127.0.0.1:18100 --upstream 127.0.0.1:18000 --log tap.log
  lab bootstrap --mode sotw --xds-addr 127.0.0.1:18100 > sotw.yaml && envoy -c sotw.yaml

  # a step every 10 s, then compare the tap's log with itself or another run
  lab tap --listen 127.0.0.1:18100 --upstream 127.0.0.1:18000 --window 10s
  lab compare tap.log experiments/compare/testdata/sotw`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runTap(ctx, o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.Var(addrValue{p: &o.listen, allowZero: true}, "listen", "where Envoy connects, 127.0.0.1:PORT (required; port 0 picks a free one)")
	f.Var(addrValue{p: &o.upstream}, "upstream", "the control plane forwarded to, 127.0.0.1:PORT (required; checked to listen at start)")
	f.StringVar(&o.logPath, "log", o.logPath, "xds.log file, appended to line by line; each tap adds a session line first")
	f.Var(durationValue{&o.window, tapWindowRange}, "window", "start a new step every window, named w1, w2, ... ("+tapWindowRange.String()+"; default: step names from stdin)")
	f.Var(intValue{&o.maxRecv, serveMsgBytesRange}, "max-recv-msg-bytes", "largest request forwarded, "+serveMsgBytesRange.String()+"; bigger ones fail their stream with RESOURCE_EXHAUSTED")
	f.Var(intValue{&o.maxSend, serveMsgBytesRange}, "max-send-msg-bytes", "largest response forwarded, "+serveMsgBytesRange.String())
	return cmd
}

// validate checks every option before anything starts; "localhost" becomes 127.0.0.1.
func (o *tapOptions) validate() error {
	if o.listen == "" {
		return missingFlag("listen", loopback.Host+":PORT")
	}
	addr, err := parseLoopbackAddr(o.listen, true)
	if err != nil {
		return badFlag("listen", o.listen, "%v", err)
	}
	o.listen = addr
	if o.upstream == "" {
		return missingFlag("upstream", loopback.Host+":PORT, the control plane's address")
	}
	up, err := parseLoopbackAddr(o.upstream, false)
	if err != nil {
		return badFlag("upstream", o.upstream, "%v", err)
	}
	o.upstream = up
	if o.upstream == o.listen {
		return badFlag("upstream", o.upstream, "the tap's own --listen address (want the control plane's)")
	}
	if o.logPath == "" {
		return badFlag("log", "", "empty (want a file path)")
	}
	if o.window != 0 {
		if err := tapWindowRange.check(o.window); err != nil {
			return badFlag("window", shortDuration(o.window), "%v", err)
		}
	}
	for _, c := range []struct {
		flag string
		n    int
	}{{"max-recv-msg-bytes", o.maxRecv}, {"max-send-msg-bytes", o.maxSend}} {
		if err := serveMsgBytesRange.check(c.n); err != nil {
			return badFlag(c.flag, strconv.Itoa(c.n), "%v", err)
		}
	}
	return nil
}

// checkUpstream dials the upstream once: a wrong port is one line at start, not a
// stream of Unavailable errors in Envoy's log.
func (o *tapOptions) checkUpstream() error {
	c, err := net.DialTimeout("tcp", o.upstream, o.dialTimeout)
	if err != nil {
		why := err.Error()
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			why = oe.Err.Error()
		}
		return badFlag("upstream", o.upstream, "nothing answers there (%s) (want a running control plane's address)", why)
	}
	return c.Close()
}

// tapLogs opens the tap's recorders: the first protocol seen records into path, the
// other (should it come) beside it.
type tapLogs struct {
	path, upstream string
	mu             sync.Mutex
	files          []*os.File
	recs           []*xdslog.Recorder
	out            io.Writer
	err            error
}

// pathFor is the log of a mode that came second: xds.log -> xds.delta.log.
func tapSecondPath(path string, mode protocol.Mode) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "." + mode.String() + ext
}

func (l *tapLogs) recorder(mode protocol.Mode) *xdslog.Recorder {
	l.mu.Lock()
	defer l.mu.Unlock()
	path := l.path
	if len(l.recs) > 0 {
		path = tapSecondPath(l.path, mode)
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
		fmt.Fprintf(l.out, "%s already held %s: this tap appends a new session; lab compare --session picks one\n", path, mib(before))
	}
	l.files = append(l.files, f)
	l.recs = append(l.recs, rec)
	return rec
}

// close flushes and closes every log; the first error is returned.
func (l *tapLogs) close() error {
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

// runTap forwards until ctx ends or, unless o.window is set, until in ends. Step names
// come from in (one a line) unless o.window is set.
func runTap(ctx context.Context, o tapOptions, in io.Reader, out, errOut io.Writer) (err error) {
	if err := o.validate(); err != nil {
		return err
	}
	if err := o.checkUpstream(); err != nil {
		return err
	}
	port, err := loopback.ParseListenAddr(o.listen)
	if err != nil {
		return badFlag("listen", o.listen, "%v", err)
	}
	lis, err := loopback.Listen(port)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.listen, err)
	}
	logs := &tapLogs{path: o.logPath, upstream: o.upstream, out: out}
	t, err := tap.New(tap.Config{Upstream: o.upstream, Recorder: logs.recorder, MaxRecvMsgSize: o.maxRecv, MaxSendMsgSize: o.maxSend})
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
	logAbs, e := filepath.Abs(o.logPath)
	if e != nil {
		logAbs = o.logPath
	}
	steps := "step names from stdin, one a line"
	if o.window > 0 {
		steps = "a step every " + shortDuration(o.window) + " (w1, w2, ...)"
	}
	fmt.Fprintf(out, "tapping ADS on %s -> %s; xds.log: %s; %s\n", addr, o.upstream, logAbs, steps)
	if o.ready != nil {
		o.ready(addr)
	}
	if o.window > 0 {
		tick := time.NewTicker(o.window)
		defer tick.Stop()
		tapWindows(ctx, t, tick.C)
		return nil
	}
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
	return nil
}

// tapWindows starts step w1 now and w2, w3, ... at each tick until ctx ends.
func tapWindows(ctx context.Context, t interface{ SetStep(string) }, ticks <-chan time.Time) {
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
