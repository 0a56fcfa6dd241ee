package serve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/session"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/sotw"
)

// Run serves until ctx ends, quit or end of input. Results go to out, one line per
// publish; command errors go to errOut as one "error:" line each and change nothing.
func Run(ctx context.Context, o Options, in io.Reader, out, errOut io.Writer) (err error) {
	picked, err := o.pickFreePorts()
	if err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	bin, err := o.preflight()
	if err != nil {
		return err
	}
	if picked != "" {
		fmt.Fprintln(out, "free ports: "+picked)
	}
	metrics, stopMetrics, err := startMetrics(o, out)
	if err != nil {
		return err
	}
	defer stopMetrics() // after the control plane stopped (deferred below, so run first)
	log, err := openServeLog(o, out, metrics.Observe)
	if err != nil {
		return err
	}
	rec := log.rec
	if err := log.ses.Start(ctx); err != nil {
		_ = log.ses.Close(context.Background())
		_ = log.file.Close()
		return err
	}
	cp := log.ses.ControlPlane()
	log.startWatchers()
	defer func() { err = log.close(err) }()

	env, err := newServeEnv(o)
	if err != nil {
		return err
	}
	// Stopped before the control plane (deferred later, runs first): Envoy's stream
	// closes while the recorder still writes.
	defer env.stop()
	sv := &serveLoop{cp: cp, acc: log.acc, rec: rec, out: out, o: o, env: env, steps: map[string]int{}}
	first := resources.State{ListenerPort: o.ListenerPort, InventoryPort: o.InventoryPort, OnDemand: o.OnDemand, Proxyless: o.Client == ClientGRPC}
	if env != nil {
		first.AccessLogPath = env.accessLog
	}
	if err := sv.start(ctx, first, bin, log.before); err != nil {
		return err
	}

	logWarned := false
	EachLine(ctx, in, out, errOut, func(text string) (stop bool) {
		cmd, perr := parseServeCommand(text)
		if perr != nil {
			fmt.Fprintf(errOut, "error: %v\n", perr)
			return false
		}
		if cmd.Verb == verbQuit {
			fmt.Fprintln(out, "stopping: quit")
			return true
		}
		sv.run(ctx, cmd, errOut)
		if e := rec.Err(); e != nil && !logWarned {
			// The server keeps serving, but the evidence is incomplete: say so once.
			logWarned = true
			fmt.Fprintf(errOut, "error: %v (xds.log is incomplete from here)\n", e)
		}
		return false
	})
	return nil
}

// preflight finds Envoy for WithEnvoy and refuses a held XDSAddr port, before
// the log is touched (the control plane binds it only after the log is open, since it
// records from its first stream on).
func (o *Options) preflight() (envoy.Binary, error) {
	var bin envoy.Binary
	if o.WithEnvoy {
		b, err := envoy.Find(o.EnvoyBin)
		if err != nil {
			return bin, refuse(OptionWithEnvoy, "", err)
		}
		bin = b
	}
	if port, perr := loopback.ParseListenAddr(o.XDSAddr); perr == nil && port != 0 {
		l, lerr := loopback.Listen(port)
		if lerr != nil {
			return bin, refuse(OptionXDSAddr, o.XDSAddr, lerr)
		}
		_ = l.Close()
	}
	return bin, nil
}

// serveLog is serve's xds.log, the session whose control plane records to it, and what
// watches its events as they are recorded.
type serveLog struct {
	file *os.File
	// before is the log's size when serve opened it (an earlier session's).
	before  int64
	ses     *session.Session
	rec     *xdslog.Recorder
	storms  *stormWatch
	console *serveConsole
	// acc is the one tally of the log's events, live: status reads what each client
	// holds here.
	acc *analysis.Accumulator
	// stopWatchers stops the storm watch and the console and waits for them.
	stopWatchers func()
}

// openServeLog opens o.LogPath for appending, makes the control plane's session
// recording to it (not serving yet) and starts the log's session; every recorded event
// also goes to the tally, the storm watch, the console and metrics.
func openServeLog(o Options, out io.Writer, metrics func(xdslog.Event)) (*serveLog, error) {
	// An *os.File is unbuffered: each xds.log line reaches the file as it is written.
	f, err := os.OpenFile(o.LogPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open xds.log: %w", err)
	}
	l := &serveLog{file: f, acc: analysis.NewAccumulator()}
	if fi, err := f.Stat(); err == nil {
		l.before = fi.Size()
	}
	l.storms = newStormWatch(out, o.StormEvery, nil, o.MaxLogSize)
	l.console = newServeConsole(out, o.Quiet, o.Mode, serveNodeID(o.NodeID), o.Cache)
	l.ses, err = session.New(session.Options{ControlPlane: o.controlPlaneOptions(), Log: f,
		Record: []xdslog.Option{xdslog.WithLogSize(l.before), xdslog.WithMaxLogBytes(o.MaxLogSize),
			xdslog.WithObserver(func(e xdslog.Event) { l.acc.Observe(e); l.storms.observe(e); l.console.observe(e); metrics(e) })}})
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	l.rec = l.ses.Recorder()
	l.storms.logSize = l.rec.Written
	// Two serve sessions appended to one file both start at server 1, stream 1, version 1:
	// the session line keeps them apart for every reader.
	l.rec.BeginSession()
	return l, nil
}

// startWatchers runs the storm watch and the console until close.
func (l *serveLog) startWatchers() {
	stormsDone := make(chan struct{})
	stormsStopped := make(chan struct{})
	go func() {
		defer close(stormsStopped)
		l.storms.run(stormsDone)
	}()
	consoleDone := make(chan struct{})
	consoleStopped := make(chan struct{})
	go func() {
		defer close(consoleStopped)
		l.console.run(consoleDone)
	}()
	l.stopWatchers = func() {
		close(stormsDone)
		<-stormsStopped
		close(consoleDone)
		<-consoleStopped
	}
}

// close closes the session before closing the log (stopping the control plane writes
// the stream_close lines, and the recorder is flushed), then the watchers; it returns
// err, or else the log's own.
func (l *serveLog) close(err error) error {
	e := l.ses.Close(context.Background())
	l.stopWatchers()
	if e != nil && err == nil {
		err = e
	}
	if e := l.file.Close(); e != nil && err == nil {
		err = fmt.Errorf("close xds.log: %w", e)
	}
	return err
}

// controlPlaneOptions is the control plane serve runs (its session records).
func (o *Options) controlPlaneOptions() controlplane.Options {
	return controlplane.Options{
		Mode:       o.Mode,
		Addr:       o.XDSAddr,
		NodeID:     o.NodeID,
		Versions:   publish.VersionStrategy(o.SotWVersions),
		NackPolicy: sotw.NackPolicy(o.NackPolicy),
		Cache:      o.Cache,
		OnDemand:   o.OnDemand,
		Limits:     o.Limits,
	}
}

// start publishes the first state, says where serve serves, and starts Envoy and the
// backends when asked (bin is Envoy with WithEnvoy); before is the log's size when
// serve opened it.
func (sv *serveLoop) start(ctx context.Context, first resources.State, bin envoy.Binary, before int64) error {
	if err := sv.publish(ctx, first); err != nil {
		return err
	}
	printServing(sv.out, sv.o, sv.cp.Addr(), before)
	sv.printPublish()
	if sv.env != nil {
		return sv.env.start(ctx, sv.o, bin, sv.cp.Addr(), sv.out)
	}
	return nil
}

// printServing says where serve serves, from which cache, and where the log is.
func printServing(out io.Writer, o Options, addr string, before int64) {
	logAbs, e := filepath.Abs(o.LogPath)
	if e != nil {
		logAbs = o.LogPath
	}
	cacheNote := ""
	if o.Cache == publish.LinearCache {
		cacheNote = " from a LinearCache per type (versions per type, behind a prefix of this start)"
	}
	if o.Cache == publish.IndexedCache {
		cacheNote = " from the indexed cache (versions per type, behind a prefix of this start)"
	}
	fmt.Fprintf(out, "serving %s ADS on %s for node %s%s; xds.log: %s (type help for commands)\n", o.Mode, addr, serveNodeID(o.NodeID), cacheNote, logAbs)
	if before > 0 {
		fmt.Fprintf(out, "xds.log already held %s: this serve appends a new session after a session line; lab compare --session picks one\n", mib(before))
	}
}

func serveNodeID(id string) string {
	if id == "" {
		return resources.NodeID
	}
	return id
}

// serveLoop is the serve loop's state: what is published and how many versions so far.
type serveLoop struct {
	cp        *controlplane.ControlPlane
	acc       *analysis.Accumulator
	rec       *xdslog.Recorder
	out       io.Writer
	o         Options
	steps     map[string]int // step name -> times used, to keep names unique
	env       *serveEnv      // nil without WithEnvoy, WithInventory and ClientGRPC
	state     resources.State
	prev, cur *resources.Set
	published int
}

// publish numbers s with the next version and publishes it; on error nothing changes.
func (sv *serveLoop) publish(ctx context.Context, s resources.State) error {
	s.Version = strconv.Itoa(sv.published + 1)
	set, err := sv.cp.Publish(ctx, s)
	if err != nil {
		return err
	}
	sv.published++
	sv.state, sv.prev, sv.cur = s, sv.cur, set
	return nil
}

func (sv *serveLoop) printPublish() {
	fmt.Fprintf(sv.out, "version %s: %s\n", sv.cur.Version, sv.cur.Describe(sv.prev))
}

func (sv *serveLoop) run(ctx context.Context, cmd serveCommand, errOut io.Writer) {
	switch cmd.Verb {
	case verbNone:
		return
	case verbHelp:
		fmt.Fprintln(sv.out, Help(sv.o.Client))
		return
	case verbRequest:
		sv.step(cmd)
		line, err := sv.env.request(ctx, sv.rec, sv.o.ListenerPort, serveHost(sv.o.OnDemand))
		if err != nil {
			fmt.Fprintf(errOut, "error: %v\n", err)
			return
		}
		fmt.Fprintln(sv.out, line)
		return
	case verbStatus:
		if cmd.JSON {
			sv.printStatusJSON()
		} else {
			sv.printStatus()
		}
		return
	}
	next, publish := applyServeCommand(sv.state, cmd)
	if !publish {
		return
	}
	sv.step(cmd)
	if err := sv.publish(ctx, next); err != nil {
		fmt.Fprintf(errOut, "error: %v\n", err)
		return
	}
	sv.printPublish()
}

func serveOrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// step starts an xds.log step named after the command, so lab compare can set an
// interactive session beside a run and --step can pick a command. A repeated command
// gets its count ("invalid #2"): steps with one name would merge.
func (sv *serveLoop) step(cmd serveCommand) {
	name := UniqueStep(sv.steps, cmd.String())
	sv.rec.SetStep(name)
	sv.rec.Emit(xdslog.Event{Event: xdslog.EventStep})
}

// UniqueStep counts name in seen and returns it, with its count from the second use on
// ("invalid #2"): steps with one name would merge.
func UniqueStep(seen map[string]int, name string) string {
	seen[name]++
	if n := seen[name]; n > 1 {
		return fmt.Sprintf("%s #%d", name, n)
	}
	return name
}

// serveShort cuts content hashes (delta resource versions are hashes too) to a readable prefix.
func serveShort(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return serveOrDash(s)
}

// serveMaxLine bounds one command line; longer lines are reported and skipped.
const serveMaxLine = 4096

type serveInputLine struct {
	text string
	err  error
}

// EachLine calls handle with each line of in until ctx ends, in ends or handle
// asks to stop, and says on out why it stopped; a line it could not read is reported
// on errOut and skipped. lab serve and lab tap read their commands alike.
func EachLine(ctx context.Context, in io.Reader, out, errOut io.Writer, handle func(text string) (stop bool)) {
	done := make(chan struct{})
	defer close(done)
	lines := serveReadLines(in, done)
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(out, "stopping: interrupted")
			return
		case l, ok := <-lines:
			if !ok {
				// For lab tap too: the tap of a `lab bench` that died ends with it.
				fmt.Fprintln(out, "stopping: end of input")
				return
			}
			if l.err != nil {
				fmt.Fprintf(errOut, "error: %v\n", l.err)
				continue
			}
			if handle(l.text) {
				return
			}
		}
	}
}

// serveReadLines delivers in's lines until end of input (channel closed) or until done is
// closed. A read from a terminal cannot be interrupted, so on a signal this goroutine
// may stay blocked until the process exits.
func serveReadLines(in io.Reader, done <-chan struct{}) <-chan serveInputLine {
	ch := make(chan serveInputLine)
	go func() {
		defer close(ch)
		br := bufio.NewReaderSize(in, serveMaxLine)
		for {
			b, isPrefix, err := br.ReadLine()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					select {
					case ch <- serveInputLine{err: fmt.Errorf("read commands: %w", err)}:
					case <-done:
					}
				}
				return
			}
			l := serveInputLine{text: string(b)}
			if isPrefix {
				// Skip the rest of an over-long line rather than misread its tail as a
				// command.
				for isPrefix && err == nil {
					_, isPrefix, err = br.ReadLine()
				}
				l = serveInputLine{err: fmt.Errorf("line longer than %d bytes ignored", serveMaxLine)}
			}
			select {
			case ch <- l:
			case <-done:
				return
			}
		}
	}()
	return ch
}
