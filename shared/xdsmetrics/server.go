package xdsmetrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/xds-workbench/lab/shared/loopback"
)

// Path is where the metrics are served.
const Path = "/metrics"

// Server serves one Metrics' registry on 127.0.0.1.
type Server struct {
	srv  *http.Server
	l    net.Listener
	done chan error
}

// Serve listens on addr (127.0.0.1:PORT; port 0 picks a free one) and serves m at /metrics
// until Close.
func Serve(addr string, m *Metrics) (*Server, error) {
	port, err := loopback.ParseListenAddr(addr)
	if err != nil {
		return nil, fmt.Errorf("metrics address: %w", err)
	}
	l, err := loopback.Listen(port) // its error names the address
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(Path, promhttp.HandlerFor(m.Registry(), promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, l: l, done: make(chan error, 1)}
	go func() {
		err := s.srv.Serve(l)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return s, nil
}

// Addr is the address served, 127.0.0.1:PORT.
func (s *Server) Addr() string { return s.l.Addr().String() }

// URL is the metrics' URL.
func (s *Server) URL() string { return "http://" + s.Addr() + Path }

// Close stops serving: scrapes in flight get up to a second to finish.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
	if err := <-s.done; err != nil {
		return fmt.Errorf("metrics: serve: %w", err)
	}
	return nil
}
