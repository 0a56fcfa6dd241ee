// Package childproc runs a child process of the workbench (Envoy, a grpc-go client) so
// that it never outlives the workbench: the lifecycle every data-plane process shares.
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

// Process is a started child. Kill or Signal it; Exited is closed once it was reaped.
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

// Terminate ends the child: SIGTERM, then SIGKILL if it has not exited after grace (or
// when ctx ends first). It returns once the child is gone; killed says it needed SIGKILL.
func (p *Process) Terminate(ctx context.Context, grace time.Duration) (killed bool) {
	if p.WaitExit(ctx, 0) {
		return false
	}
	_ = p.Signal(syscall.SIGTERM)
	if p.WaitExit(ctx, grace) {
		return false
	}
	_ = p.Kill()
	<-p.exited
	return true
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
