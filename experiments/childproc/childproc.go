// Package childproc is the one place the workbench starts, watches and stops child
// processes (Envoy, grpc-go clients, go-control-plane's test server, a `lab tap`, and
// short commands such as `go build` or `envoy --version`), so that none outlives it:
// every child gets Pdeathsig and its own process group. It also reads processes' CPU
// and memory (a child's from /proc or its CPU clock, this process's from getrusage).
// What a child is for (its readiness, its clean stop) stays with its own package.
package childproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// Command is the command Start runs: name with args. Callers set its I/O, Env and Dir;
// Start owns SysProcAttr. Every process the workbench runs is built here, so none can
// miss Start's rules by being made with exec.Command elsewhere.
func Command(name string, args ...string) *exec.Cmd {
	return exec.Command(name, args...)
}

// Process is a started child. Stop, Kill or Signal it; Exited is closed once it was
// reaped.
type Process struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	exitErr error
}

// Start starts cmd as a child that dies with the workbench: Pdeathsig sends it SIGKILL
// when the workbench dies (even by SIGKILL), and Setpgid keeps a terminal's Ctrl-C from
// reaching it before the workbench can stop it cleanly. cmd.SysProcAttr is replaced.
func Start(cmd *exec.Cmd) (*Process, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	// Linux sends Pdeathsig when the forking *thread* dies, not the process
	// (go.dev/issue/27505), and a Go thread can die while the process lives (a goroutine
	// that exits locked to it takes it along). The child then got SIGKILL out of the blue:
	// the cause of a TestCrashedParentLeavesNoEnvoy flake under `make flake`. So the
	// child is forked from a goroutine that holds its thread until the child has exited;
	// nothing else runs on that thread, so it lives exactly as long as the child needs it.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.exitErr = cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// Pid is the child's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed once the child has exited and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitErr is the exit status from Wait (nil for exit 0, and while the child runs).
func (p *Process) ExitErr() error {
	select {
	case <-p.exited:
		return p.exitErr
	default:
		return nil
	}
}

// Kill sends SIGKILL without waiting; watch Exited for the exit.
func (p *Process) Kill() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill pid %d: %w", p.Pid(), err)
	}
	return nil
}

// Signal sends sig; a child already gone is not an error.
func (p *Process) Signal(sig os.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal pid %d: %w", p.Pid(), err)
	}
	return nil
}

// WaitExit waits up to grace (or until ctx ends) and reports whether the child has
// exited; grace <= 0 only looks.
func (p *Process) WaitExit(ctx context.Context, grace time.Duration) bool {
	if grace <= 0 {
		select {
		case <-p.exited:
			return true
		default:
			return false
		}
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-ctx.Done():
		return false
	case <-t.C:
		return false
	}
}

// Stop ends the child: SIGTERM, then, if it has not exited after grace (or when ctx
// ends first), SIGKILL to its whole process group, so nothing it started survives
// either. It returns once the child is gone; killed says it needed SIGKILL. err is a
// SIGKILL that failed (the child may then still run, and Stop does not wait).
func (p *Process) Stop(ctx context.Context, grace time.Duration) (killed bool, err error) {
	if p.WaitExit(ctx, 0) {
		return false, nil
	}
	_ = p.Signal(syscall.SIGTERM)
	if p.WaitExit(ctx, grace) {
		return false, nil
	}
	if err := p.killGroup(); err != nil {
		return true, err
	}
	<-p.exited
	return true, nil
}

// killGroup sends SIGKILL to the child's process group (Start made the child its
// leader, so the group id is its pid).
func (p *Process) killGroup() error {
	if err := syscall.Kill(-p.Pid(), syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill process group %d: %w", p.Pid(), err)
	}
	return nil
}

// Tail keeps the last Max bytes written (a child's stdout and stderr) for error messages.
type Tail struct {
	mu  sync.Mutex
	Max int
	buf []byte
}

func (b *Tail) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.Max {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-b.Max:]...)
	}
	return len(p), nil
}

func (b *Tail) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
