package simclient

import (
	"context"
	"errors"
	"fmt"
	"io"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xds-workbench/lab/shared/protocol"
)

// RunMode runs the stream loop of mode (protocol.SotW, else delta) on client and
// returns nil when ctx ended: a stream broken by the caller's cancel is a clean stop,
// not a failure. The simulated client and the bench's ack-only clients stop alike.
func RunMode(ctx context.Context, mode protocol.Mode, client discovery.AggregatedDiscoveryServiceClient,
	sotw, delta func(context.Context, discovery.AggregatedDiscoveryServiceClient) error) error {
	var err error
	if mode == protocol.SotW {
		err = sotw(ctx, client)
	} else {
		err = delta(ctx, client)
	}
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// adsStream is the client side of an ADS stream of either protocol.
type adsStream[Req, Resp any] interface {
	Send(Req) error
	Recv() (Resp, error)
	Context() context.Context
}

// typed is a request that names its type URL (for error messages).
type typed interface{ GetTypeUrl() string }

// exchange sends first, then answers every response with the requests handle returns,
// until the stream breaks. proto ("SotW", "delta") and request ("request", "delta
// request") word its errors. Once stalled is closed it reads nothing more (the response
// it is waiting for when that happens is still read and answered) until the stream's
// context ends: a client whose receive window fills (Client.StopReading).
func exchange[Req typed, Resp any](stream adsStream[Req, Resp], stalled <-chan struct{}, proto, request string, first []Req, handle func(Resp) []Req) error {
	send := func(reqs []Req) error {
		for _, r := range reqs {
			if err := stream.Send(r); err != nil {
				return fmt.Errorf("send %s %s: %w", r.GetTypeUrl(), request, err)
			}
		}
		return nil
	}
	if err := send(first); err != nil {
		return err
	}
	for {
		select {
		case <-stalled:
			<-stream.Context().Done()
			return stream.Context().Err()
		default:
		}
		resp, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%s stream closed by server", proto)
			}
			return fmt.Errorf("%s stream: %w", proto, err)
		}
		if err := send(handle(resp)); err != nil {
			return err
		}
	}
}
