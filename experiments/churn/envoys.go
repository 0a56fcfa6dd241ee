package churn

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/experiments/client"
	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/shared/protocol"
)

// fleet is the soak's real Envoys, each killed (SIGKILL) and restarted at random. It
// remembers every pid it started, for the orphan verdict.
type fleet struct {
	restarts atomic.Int64
	mu       sync.Mutex
	pids     []int
	wg       sync.WaitGroup
	errs     chan error
}

// envoySpec is one Envoy: its node, mode and control plane.
type envoySpec struct {
	node, xdsAddr string
	mode          protocol.Mode
}

// start runs one supervisor per spec until ctx ends. A failed (re)start ends that
// supervisor and is reported by wait.
func (f *fleet) start(ctx context.Context, specs []envoySpec, bin envoy.Binary, o Options) {
	f.errs = make(chan error, len(specs))
	for i, s := range specs {
		rng := rand.New(rand.NewPCG(uint64(o.Seed), uint64(1000+i)))
		f.wg.Go(func() {
			if err := f.supervise(ctx, s, bin, o, rng); err != nil {
				f.errs <- err
			}
		})
	}
}

// supervise starts the Envoy of s, and kills and restarts it every KillMin-KillMax,
// until ctx ends; then stops it.
func (f *fleet) supervise(ctx context.Context, s envoySpec, bin envoy.Binary, o Options, rng *rand.Rand) error {
	e, err := client.NewEnvoy(client.EnvoyOptions{
		Bootstrap: envoy.Bootstrap{Mode: s.mode, Path: filepath.Join(o.Out, "bootstrap-"+s.node+".yaml"),
			Params: bootstrap.Params{NodeID: s.node, XDSAddr: s.xdsAddr}},
		Process: envoy.Options{Binary: bin, LogPath: filepath.Join(o.Out, "envoy-"+s.node+".log"), ExtraArgs: []string{"--concurrency", "1"}}})
	if err != nil {
		return fmt.Errorf("envoy %s: %w", s.node, err)
	}
	for first := true; ; first = false {
		if err := e.Start(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("envoy %s: %w", s.node, err)
		}
		f.mu.Lock()
		f.pids = append(f.pids, e.PID())
		f.mu.Unlock()
		if !first {
			f.restarts.Add(1)
		}
		wait := o.KillMin + time.Duration(rng.Int64N(int64(o.KillMax-o.KillMin)+1))
		select {
		case <-ctx.Done():
			// A clean stop at the end: /quitquitquit, then signals (envoy.Process.Stop).
			_ = e.Stop(context.Background())
			return nil
		case <-time.After(wait):
		}
		// SIGKILL, the exit, and the temporary directory removed.
		if err := e.Crash(context.Background()); err != nil {
			return fmt.Errorf("envoy %s: %w", s.node, err)
		}
	}
}

// wait waits for every supervisor and returns the first error.
func (f *fleet) wait() error {
	f.wg.Wait()
	close(f.errs)
	return <-f.errs
}

// started returns every pid started.
func (f *fleet) started() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.pids...)
}
