package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/xds-workbench/lab/experiments/childproc"
	"github.com/xds-workbench/lab/experiments/tap"
	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// tapStartTimeout bounds how long a tap subprocess may take to say where it listens;
// tapStopGrace how long it may take to stop on SIGTERM before it is killed.
const (
	tapStartTimeout = 10 * time.Second
	tapStopGrace    = 10 * time.Second
)

// benchTap is the tap of one configuration: in this process (Options.TapCommand empty;
// its CPU is then inside cp_cpu_ms) or a `lab tap` subprocess, whose CPU is read from
// its process clock as Envoy's is.
type benchTap struct {
	addr string
	// In-process.
	t      *tap.Tap
	served chan error
	file   *os.File
	rec    *xdslog.Recorder
	// Subprocess.
	proc   *childproc.Process
	stdin  io.WriteCloser
	output *os.File
	// read is closed once the subprocess's stdout reached its end.
	read chan struct{}
	// steps has a value for each "step NAME" line the subprocess printed (closed at
	// its end): setStep waits for it.
	steps chan struct{}
}

// startTap starts the configuration's tap in front of upstream, recording into logPath.
func (r *configRun) startTap(upstream, logPath string) (*benchTap, error) {
	if len(r.e.Options.TapCommand) > 0 {
		return startTapProcess(r.e.Options.TapCommand, upstream, logPath, strings.TrimSuffix(logPath, ".tap.log")+".tap.out")
	}
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create tap log: %w", err)
	}
	bt := &benchTap{file: f}
	mode := r.s.Mode
	t, err := tap.New(tap.Config{Upstream: upstream, Recorder: func(m protocol.Mode) *xdslog.Recorder {
		if m != mode || bt.rec != nil {
			return nil // one log, one protocol: the bench's client speaks only mode
		}
		bt.rec = xdslog.NewRecorder(f, m, xdslog.WithTap(upstream))
		bt.rec.BeginSession()
		return bt.rec
	}})
	if err != nil {
		f.Close()
		return nil, err
	}
	lis, err := loopback.Listen(0)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("tap listener: %w", err)
	}
	bt.t, bt.addr, bt.served = t, lis.Addr().String(), make(chan error, 1)
	go func() { bt.served <- t.Serve(lis) }()
	return bt, nil
}

// startTapProcess runs cmd... tap --listen 127.0.0.1:0 --upstream UPSTREAM --log LOG and
// reads the address it serves on from its first line; its other output goes to outPath.
// Step names are written to its stdin, one a line, as `lab tap` reads them.
func startTapProcess(command []string, upstream, logPath, outPath string) (*benchTap, error) {
	out, err := os.Create(outPath)
	if err != nil {
		return nil, fmt.Errorf("create tap output: %w", err)
	}
	args := append(append([]string{}, command[1:]...), "tap", "--listen", loopback.Addr(0), "--upstream", upstream, "--log", logPath)
	cmd := childproc.Command(command[0], args...)
	cmd.Stderr = out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		out.Close()
		return nil, fmt.Errorf("tap stdin: %w", err)
	}
	// A pipe of our own, not StdoutPipe: childproc waits for the exit as soon as it
	// happens, and Wait would close StdoutPipe's end before all of it is read.
	pr, pw, err := os.Pipe()
	if err != nil {
		out.Close()
		return nil, fmt.Errorf("tap stdout: %w", err)
	}
	cmd.Stdout = pw
	// childproc: a killed `lab bench` takes the tap along (Pdeathsig).
	proc, err := childproc.Start(cmd)
	pw.Close() // the child holds its copy; EOF on pr when it exits
	if err != nil {
		pr.Close()
		out.Close()
		return nil, fmt.Errorf("start tap %s: %w", command[0], err)
	}
	bt := &benchTap{proc: proc, stdin: stdin, output: out, read: make(chan struct{}), steps: make(chan struct{}, 16)}
	addrc := make(chan string, 1)
	go bt.readOutput(pr, out, addrc)
	select {
	case a, ok := <-addrc:
		if ok {
			if _, _, err := net.SplitHostPort(a); err == nil {
				bt.addr = a
				return bt, nil
			}
		}
	case <-time.After(tapStartTimeout):
	}
	_ = bt.stop()
	return nil, fmt.Errorf("tap subprocess did not say where it listens within %s (its output: %s)", tapStartTimeout, filepath.Base(outPath))
}

// readOutput copies the subprocess's stdout to out, sends the address of its first
// line ("tapping ADS on ADDR ...") to addrc and counts its "step NAME" lines.
func (bt *benchTap) readOutput(stdout io.ReadCloser, out io.Writer, addrc chan<- string) {
	defer close(bt.read)
	defer stdout.Close()
	sc := bufio.NewScanner(stdout)
	first := true
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(out, line)
		if first && strings.HasPrefix(line, "tapping ADS on ") {
			first = false
			addrc <- strings.Fields(strings.TrimPrefix(line, "tapping ADS on "))[0]
		} else if strings.HasPrefix(line, "step ") {
			select {
			case bt.steps <- struct{}{}:
			default:
			}
		}
	}
	close(addrc)
	close(bt.steps)
}

// setStep labels the tap's following lines with step. A subprocess is waited for until
// it says it set the step ("step NAME", printed once the step line is written in its
// log, behind every frame it saw before): the frames of the step's change, which the
// caller publishes next, are then in the step, as in the control plane's log.
func (bt *benchTap) setStep(step string) {
	if bt.t != nil {
		bt.t.SetStep(step)
		return
	}
	fmt.Fprintln(bt.stdin, step)
	select {
	case <-bt.steps:
	case <-time.After(tapStartTimeout):
	}
}

// pid is the subprocess's (0 in-process).
func (bt *benchTap) pid() int {
	if bt.proc == nil {
		return 0
	}
	return bt.proc.Pid()
}

// cpu is the subprocess's CPU so far.
func (bt *benchTap) cpu() (time.Duration, error) { return childproc.CPUClock(bt.pid()) }

// stop ends the tap (its streams' stream_close lines are written first) and closes its
// log.
func (bt *benchTap) stop() error {
	if bt.t != nil {
		bt.t.Stop()
		<-bt.served
		var errs []error
		if bt.rec != nil {
			bt.rec.Flush()
			errs = append(errs, bt.rec.Err())
		}
		errs = append(errs, bt.file.Close())
		return errors.Join(errs...)
	}
	killed, err := bt.proc.Stop(context.Background(), tapStopGrace)
	if err == nil {
		<-bt.read
		err = bt.proc.ExitErr()
		if killed {
			err = errors.Join(fmt.Errorf("tap subprocess did not stop on SIGTERM within %s: killed", tapStopGrace), err)
		}
	}
	_ = bt.stdin.Close()
	if cerr := bt.output.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("tap subprocess: %w", err)
	}
	return nil
}
