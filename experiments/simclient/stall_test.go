package simclient

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeStream is an adsStream whose responses a test hands over one by one.
type fakeStream struct {
	ctx   context.Context
	resps chan string
	sent  atomic.Int32
}

type fakeReq string

func (r fakeReq) GetTypeUrl() string { return string(r) }

func (s *fakeStream) Send(fakeReq) error       { s.sent.Add(1); return nil }
func (s *fakeStream) Context() context.Context { return s.ctx }
func (s *fakeStream) Recv() (string, error) {
	select {
	case r := <-s.resps:
		return r, nil
	case <-s.ctx.Done():
		return "", s.ctx.Err()
	}
}

// After StopReading, the response being waited for is still read and answered, and
// nothing after it is read until the stream's context ends.
func TestStopReadingLeavesLaterResponsesUnread(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &fakeStream{ctx: ctx, resps: make(chan string, 1)}
	var handled atomic.Int32
	stalled := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- exchange(s, stalled, "SotW", "request", []fakeReq{"first"}, func(string) []fakeReq {
			handled.Add(1)
			return []fakeReq{"ack"}
		})
	}()
	s.resps <- "r1"
	require.Eventually(t, func() bool { return handled.Load() == 1 }, 5*time.Second, time.Millisecond)
	close(stalled)
	s.resps <- "r2" // the one the client was already waiting for
	require.Eventually(t, func() bool { return handled.Load() == 2 }, 5*time.Second, time.Millisecond)
	s.resps <- "r3"
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("exchange did not end with its stream's context")
	}
	assert.EqualValues(t, 2, handled.Load(), "nothing read after the stall")
	assert.Len(t, s.resps, 1, "r3 left unread")
	assert.EqualValues(t, 3, s.sent.Load(), "the first request and two ACKs")
}
