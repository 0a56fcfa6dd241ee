package churn

import (
	"context"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xds-workbench/lab/experiments/client"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
)

// ClientCounts count the simulated population's life: connects (a stream opened),
// leaves, and the ACKs and NACKs the clients sent.
type ClientCounts struct {
	Connects int64 `json:"connects"`
	Leaves   int64 `json:"leaves"`
	Acks     int64 `json:"acks"`
	Nacks    int64 `json:"nacks"`
	// Failed counts streams that ended before their lifetime (not by the client), and
	// FailedBy the same by error text (the first maxFailureKinds texts; the rest as
	// "other").
	Failed   int64            `json:"failed"`
	FailedBy map[string]int64 `json:"failed_by,omitempty"`
}

// maxFailureKinds bounds the distinct failure texts kept.
const maxFailureKinds = 8

// population is a churned set of simulated clients: slots, each running one client
// after another. Every client has a grpc.ClientConn of its own, so that leaving closes
// its connection as a departing Envoy's would.
type population struct {
	connects, leaves, acks, nacks, failed atomic.Int64
	connected                             atomic.Int64
	wg                                    sync.WaitGroup

	mu       sync.Mutex
	failedBy map[string]int64
}

// start runs n slots against addr in mode until ctx ends.
func (p *population) start(ctx context.Context, mode protocol.Mode, addr string, n int, o Options, seed uint64) {
	for i := range n {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		p.wg.Go(func() { p.slot(ctx, mode, addr, o, rng) })
	}
}

// slot runs clients one after another, each for a random lifetime, until ctx ends.
func (p *population) slot(ctx context.Context, mode protocol.Mode, addr string, o Options, rng *rand.Rand) {
	for ctx.Err() == nil {
		life := o.LifetimeMin + time.Duration(rng.Int64N(int64(o.LifetimeMax-o.LifetimeMin)+1))
		if err := p.client(ctx, mode, addr, life, o.NackRate, rng); err != nil {
			p.fail(err)
			// A refused or broken connection is retried after a short pause, not in a
			// tight loop.
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// client connects one simulated client for life, NACKing a nackRate share of valid
// responses, and counts what it did.
func (p *population) client(ctx context.Context, mode protocol.Mode, addr string, life time.Duration, nackRate float64, rng *rand.Rand) error {
	c, err := client.NewSim(client.SimOptions{Mode: mode, Node: ClientNode, Addr: addr,
		Reject: func(resources.Type) bool { return rng.Float64() < nackRate }})
	if err != nil {
		return err
	}
	// The lifetime ends with a cancel, not a deadline: a context deadline travels as
	// grpc-timeout, the server enforces it too and may end the stream a moment before
	// the client's own timer fires, which then reads as a failure
	// (DeadlineExceeded, RST_STREAM CANCEL) rather than a leave.
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := time.AfterFunc(life, cancel)
	defer stop.Stop()
	p.connects.Add(1)
	p.connected.Add(1)
	err = c.Run(lctx) // on a connection of its own, closed as it ends
	p.connected.Add(-1)
	p.leaves.Add(1)
	for _, cnt := range c.State().Counters {
		p.acks.Add(int64(cnt.Acks))
		p.nacks.Add(int64(cnt.Nacks))
	}
	return err
}

// fail counts a stream that ended before its lifetime, by its error's text.
func (p *population) fail(err error) {
	p.failed.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failedBy == nil {
		p.failedBy = map[string]int64{}
	}
	k := err.Error()
	if _, ok := p.failedBy[k]; !ok && len(p.failedBy) >= maxFailureKinds {
		k = "other"
	}
	p.failedBy[k]++
}

// wait waits for every slot to end (after ctx ended).
func (p *population) wait() { p.wg.Wait() }

// counts reads the counters.
func (p *population) counts() ClientCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return ClientCounts{Connects: p.connects.Load(), Leaves: p.leaves.Load(), Acks: p.acks.Load(),
		Nacks: p.nacks.Load(), Failed: p.failed.Load(), FailedBy: maps.Clone(p.failedBy)}
}
