package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/shared/frontend"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/sotw"
)

// serveOptions are the flags of `lab serve`.
type serveOptions struct {
	mode          string
	xdsAddr       string
	nodeID        string
	inventoryPort int
	listenerPort  int
	logPath       string
	sotwVersions  string
	nackPolicy    string
	limits        controlplane.Limits
}

func defaultServeOptions() serveOptions {
	return serveOptions{
		xdsAddr:       controlplane.DefaultAddr,
		nodeID:        resources.NodeID,
		inventoryPort: 18080,
		listenerPort:  resources.DefaultListener,
		logPath:       "xds.log",
		limits:        controlplane.DefaultLimits(),
	}
}

func newServeCmd() *cobra.Command {
	o := defaultServeOptions()
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve Envoy over ADS (SotW or delta) and change the state from stdin",
		Long: `serve runs the teaching control plane: one ADS front end, SotW or delta, on 127.0.0.1.
It publishes version 1 (a valid route to cluster "inventory" at 127.0.0.1:<inventory-port>)
and then reads commands from stdin, one per line; each state command publishes the next
version (2, 3, ...). Every publish, send, ACK and NACK is appended to the xds.log file.
End of input, quit, SIGINT or SIGTERM stop the server.

` + serveHelp,
		Example: `  # SotW, for an Envoy started with bootstrap/sotw.yaml
  lab serve --mode sotw

  # delta on another port, with its own log
  lab serve --mode delta --xds-addr 127.0.0.1:18001 --log delta.log

  # SotW that re-sends only the types whose content changed, and holds after a NACK
  lab serve --mode sotw --sotw-versions per-type --nack-policy hold`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runServe(ctx, o, os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	d := controlplane.DefaultLimits()
	f := cmd.Flags()
	f.StringVar(&o.mode, "mode", "", "ADS protocol: sotw or delta (required)")
	f.StringVar(&o.xdsAddr, "xds-addr", o.xdsAddr, "gRPC listen address; only 127.0.0.1 is allowed")
	f.StringVar(&o.nodeID, "node-id", o.nodeID, "Envoy node ID served")
	f.IntVar(&o.inventoryPort, "inventory-port", o.inventoryPort, "endpoint port of cluster inventory in version 1")
	f.IntVar(&o.listenerPort, "listener-port", o.listenerPort, "Envoy listener port")
	f.StringVar(&o.logPath, "log", o.logPath, "xds.log file, appended to line by line")
	f.StringVar(&o.sotwVersions, "sotw-versions", "", "SotW type versions: uniform (every publish re-sends all types) or per-type (default uniform; sotw only)")
	f.StringVar(&o.nackPolicy, "nack-policy", "", "SotW behaviour after a NACK: resend (the library's loop) or hold (default resend; sotw only)")
	f.IntVar(&o.limits.MaxRecvMsgSize, "max-recv-msg-bytes", d.MaxRecvMsgSize, "largest request accepted; bigger ones fail their stream with RESOURCE_EXHAUSTED")
	f.IntVar(&o.limits.MaxSendMsgSize, "max-send-msg-bytes", d.MaxSendMsgSize, "largest response sent (a SotW push of 10,000 clusters is a few MB)")
	f.Uint32Var(&o.limits.MaxConcurrentStreams, "max-concurrent-streams", d.MaxConcurrentStreams, "HTTP/2 streams per connection")
	f.IntVar(&o.limits.MaxStreams, "max-streams", d.MaxStreams, "ADS streams served at once in total; extra ones are refused with RESOURCE_EXHAUSTED")
	f.DurationVar(&o.limits.KeepaliveMinTime, "keepalive-min-time", d.KeepaliveMinTime, "clients pinging more often get GOAWAY too_many_pings")
	_ = cmd.MarkFlagRequired("mode")
	return cmd
}

// runServe serves until ctx ends, quit or end of input. Results go to out, one line per
// publish; command errors go to errOut as one "error:" line each and change nothing.
func runServe(ctx context.Context, o serveOptions, in io.Reader, out, errOut io.Writer) (err error) {
	if o.mode != xdslog.ModeSotW && o.mode != xdslog.ModeDelta {
		return fmt.Errorf("serve: unknown --mode %q (want sotw or delta)", o.mode)
	}
	if e := loopback.ValidatePort(o.inventoryPort); e != nil {
		return fmt.Errorf("serve: --inventory-port: %w", e)
	}
	if e := loopback.ValidatePort(o.listenerPort); e != nil {
		return fmt.Errorf("serve: --listener-port: %w", e)
	}
	if o.logPath == "" {
		return errors.New("serve: --log is empty")
	}
	// An *os.File is unbuffered: each xds.log line reaches the file as it is written.
	logFile, err := os.OpenFile(o.logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("serve: open xds.log: %w", err)
	}
	rec := xdslog.NewRecorder(logFile, o.mode)
	cp, err := controlplane.Start(ctx, controlplane.Options{
		Mode:       o.mode,
		Addr:       o.xdsAddr,
		NodeID:     o.nodeID,
		Versions:   frontend.VersionStrategy(o.sotwVersions),
		NackPolicy: sotw.NackPolicy(o.nackPolicy),
		Recorder:   rec,
		Limits:     o.limits,
	})
	if err != nil {
		_ = logFile.Close()
		return fmt.Errorf("serve: %w", err)
	}
	// Stop before closing the log: stopping writes the stream_close lines.
	defer func() {
		cp.Stop()
		if e := rec.Err(); e != nil && err == nil {
			err = fmt.Errorf("serve: %w", e)
		}
		if e := logFile.Close(); e != nil && err == nil {
			err = fmt.Errorf("serve: close xds.log: %w", e)
		}
	}()

	sv := &serveLoop{cp: cp, out: out}
	if err := sv.publish(ctx, resources.State{ListenerPort: o.listenerPort, InventoryPort: o.inventoryPort}); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	logAbs, e := filepath.Abs(o.logPath)
	if e != nil {
		logAbs = o.logPath
	}
	fmt.Fprintf(out, "serving %s ADS on %s for node %s; xds.log: %s (type help for commands)\n", o.mode, cp.Addr(), serveNodeID(o.nodeID), logAbs)
	sv.printPublish()

	done := make(chan struct{})
	defer close(done)
	lines := serveReadLines(in, done)
	logWarned := false
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(out, "stopping: interrupted")
			return nil
		case l, ok := <-lines:
			if !ok {
				fmt.Fprintln(out, "stopping: end of input")
				return nil
			}
			if l.err != nil {
				fmt.Fprintf(errOut, "error: %v\n", l.err)
				continue
			}
			cmd, perr := parseServeCommand(l.text)
			if perr != nil {
				fmt.Fprintf(errOut, "error: %v\n", perr)
				continue
			}
			if cmd.Verb == verbQuit {
				fmt.Fprintln(out, "stopping: quit")
				return nil
			}
			sv.run(ctx, cmd, errOut)
			if e := rec.Err(); e != nil && !logWarned {
				// The server keeps serving, but the evidence is incomplete: say so once.
				logWarned = true
				fmt.Fprintf(errOut, "error: %v (xds.log is incomplete from here)\n", e)
			}
		}
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
	out       io.Writer
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
		fmt.Fprintln(sv.out, serveHelp)
		return
	case verbStatus:
		sv.printStatus()
		return
	}
	next, publish := applyServeCommand(sv.state, cmd)
	if !publish {
		return
	}
	if err := sv.publish(ctx, next); err != nil {
		fmt.Fprintf(errOut, "error: %v\n", err)
		return
	}
	sv.printPublish()
}

// printStatus shows the current version and, per open stream, what the client accepted
// (from the recorder's ACK bookkeeping: a NACKed send never appears here).
func (sv *serveLoop) printStatus() {
	head := fmt.Sprintf("version %s published", sv.cur.Version)
	// SotW per-type versions can lag the label; show them when they do.
	if v, ok := sv.cp.FrontEnd().(interface {
		Versions() map[resources.Type]string
	}); ok {
		var parts []string
		lag := false
		for _, t := range resources.Types {
			tv := v.Versions()[t]
			lag = lag || tv != sv.cur.Version
			parts = append(parts, string(t)+" "+tv)
		}
		if lag {
			head += " (type versions: " + strings.Join(parts, ", ") + ")"
		}
	}
	streams := sv.cp.Recorder().Status()
	switch len(streams) {
	case 0:
		fmt.Fprintf(sv.out, "%s; no stream connected\n", head)
		return
	case 1:
		fmt.Fprintf(sv.out, "%s; 1 stream connected\n", head)
	default:
		fmt.Fprintf(sv.out, "%s; %d streams connected\n", head, len(streams))
	}
	tw := tabwriter.NewWriter(sv.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STREAM\tTYPE\tACCEPTED\tRESOURCE\tVERSION\tHASH")
	for _, st := range streams {
		types := slices.Sorted(maps.Keys(st.Accepted))
		if len(types) == 0 {
			fmt.Fprintf(tw, "%d\t-\t-\t(nothing requested yet)\t-\t-\n", st.Stream)
		}
		for _, typ := range types {
			label := serveOrDash(st.Versions[typ])
			names := slices.Sorted(maps.Keys(st.Accepted[typ]))
			if len(names) == 0 {
				fmt.Fprintf(tw, "%d\t%s\t%s\t(none accepted)\t-\t-\n", st.Stream, typ, label)
			}
			for _, n := range names {
				a := st.Accepted[typ][n]
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", st.Stream, typ, label, n, serveShort(a.Version), serveShort(a.Hash))
			}
		}
	}
	_ = tw.Flush()
}

func serveOrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
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
