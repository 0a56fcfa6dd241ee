package serve

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// serveConsole turns the recorder's events into one console line per event that
// matters: a stream opened, an ACK, a NACK, a refused stream, a stale or unsubscribe
// request, a stream closed. It reads the recorder's classification (the event kind, the
// request kind, the repeat count) and never classifies anything itself. observe runs
// under the recorder's lock, so it only formats and queues; run prints.
type serveConsole struct {
	out   io.Writer
	quiet bool          // --quiet: only refusals (errors) are printed
	mode  protocol.Mode // the protocol served
	// servesNode reports whether the control plane has a state for a node ID.
	servesNode func(node string) bool
	served     string // the node ID published to, for the wrong-node hint

	mu    sync.Mutex
	peers map[int64]string // stream -> peer, until its open line is printed
	queue []string
	wake  chan struct{}
}

func newServeConsole(out io.Writer, quiet bool, mode protocol.Mode, served string, cache publish.Cache) *serveConsole {
	return &serveConsole{out: out, quiet: quiet, mode: mode, served: served,
		servesNode: func(n string) bool { return serveHasState(cache, served, n) },
		peers:      map[int64]string{}, wake: make(chan struct{}, 1)}
}

// serveHasState says whether a client with node ID node gets the published state: the
// SnapshotCache keeps it under the served node ID only, the LinearCache serves every
// node alike.
func serveHasState(cache publish.Cache, served, node string) bool {
	return cache.VersionsPerType() || node == served
}

// observe is the recorder's observer.
func (c *serveConsole) observe(e xdslog.Event) {
	line := c.line(e)
	if line == "" {
		return
	}
	c.mu.Lock()
	c.queue = append(c.queue, line)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// line formats e, or returns "" for an event the console does not show.
func (c *serveConsole) line(e xdslog.Event) string {
	if e.Event == xdslog.EventRefused {
		// An error: shown even with --quiet. The message carries the fix.
		from := ""
		if e.Peer != "" {
			from = " from " + e.Peer
		}
		return fmt.Sprintf("refused%s: %s", from, e.Error)
	}
	if c.quiet {
		return ""
	}
	s := fmt.Sprintf("stream %d", e.Stream)
	switch e.Event {
	case xdslog.EventStreamOpen:
		// The node ID comes with the first request: the line waits for it.
		c.mu.Lock()
		c.peers[e.Stream] = e.Peer
		c.mu.Unlock()
	case xdslog.EventRequest:
		var parts []string
		if e.Node != "" {
			c.mu.Lock()
			peer, ok := c.peers[e.Stream]
			delete(c.peers, e.Stream)
			c.mu.Unlock()
			if ok {
				parts = append(parts, c.openLine(e.Stream, e.Node, peer))
			}
		}
		if e.Kind == xdslog.RequestUnsubscribe {
			parts = append(parts, fmt.Sprintf("%s %s unsubscribe: the client let go of every name (%s)", s, e.Type, strings.Join(e.Removed, ", ")))
		}
		return strings.Join(parts, "\n")
	case xdslog.EventAck:
		return fmt.Sprintf("%s %s ACK version %s", s, e.Type, e.Accepted())
	case xdslog.EventNack:
		// Only the first rejection of this content: the repeats of a NACK storm are the
		// storm watch's to summarize.
		if e.Repeat > 1 {
			return ""
		}
		return fmt.Sprintf("%s %s NACK of version %s (the client keeps version %s): %s", s, e.Type, e.SentVersion, serveOrDash(e.Accepted()), xdslog.NackReason(e.Error))
	case xdslog.EventStale:
		return fmt.Sprintf("%s %s stale request: nonce %s is not the latest sent (%s), so the server ignores it", s, e.Type, serveOrDash(e.Nonce), e.LatestNonce)
	case xdslog.EventUnmatched:
		return fmt.Sprintf("%s %s answer to unknown nonce %s (not counted as an ACK or a NACK)", s, e.Type, serveOrDash(e.Nonce))
	case xdslog.EventStreamClose:
		c.mu.Lock()
		delete(c.peers, e.Stream)
		c.mu.Unlock()
		switch n := derefInt(e.Dropped); n {
		case 0:
			return s + " closed: every send was answered"
		case 1:
			return s + " closed: 1 send never answered"
		default:
			return fmt.Sprintf("%s closed: %d sends never answered", s, n)
		}
	}
	return ""
}

func (c *serveConsole) openLine(stream int64, node, peer string) string {
	from := ""
	if peer != "" {
		from = " from " + peer
	}
	l := fmt.Sprintf("stream %d open: node %s%s (%s ADS)", stream, node, from, c.mode)
	if !c.servesNode(node) {
		l += fmt.Sprintf("; no state for this node ID: this server publishes to node %s (serve with --node-id %s or render the bootstrap with lab bootstrap --node-id %s)", c.served, node, c.served)
	}
	return l
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// flush prints what is queued.
func (c *serveConsole) flush() {
	c.mu.Lock()
	q := c.queue
	c.queue = nil
	c.mu.Unlock()
	for _, l := range q {
		fmt.Fprintln(c.out, l)
	}
}

// run prints queued lines until done is closed, then prints what is left.
func (c *serveConsole) run(done <-chan struct{}) {
	for {
		select {
		case <-c.wake:
			c.flush()
		case <-done:
			c.flush()
			return
		}
	}
}
