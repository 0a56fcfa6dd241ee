package runner

import (
	"context"
	"errors"
	"github.com/xds-workbench/lab/shared/certs"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/xds-workbench/lab/bootstrap"
	"github.com/xds-workbench/lab/experiments/client"
	"github.com/xds-workbench/lab/experiments/envoy"
	"github.com/xds-workbench/lab/experiments/inventory"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/scenario"
)

// Observation is one request through the data plane, with every piece of evidence that
// names who answered it (client.Observation: the client says what the answer itself
// says; the run adds the backend's own log and Envoy's access log, dataPlane.request).
type Observation = client.Observation

// Classes of a data-plane answer (Observation.Class).
const (
	ClassServed          = client.ClassServed
	ClassUpstreamFailure = client.ClassUpstreamFailure
	ClassConfigFailure   = client.ClassConfigFailure
	ClassOther           = client.ClassOther
	ClassNoResponse      = client.ClassNoResponse
)

// Classify names the kind of a data-plane answer from its status and Envoy response
// flags (client.Classify).
func Classify(status int, flags string) string { return client.Classify(status, flags) }

// newEnvoyClient renders the mode's bootstrap from params (the run's one rendering: the
// xDS address, the admin port, and the scenario's on-demand clusters) into dir. Envoy
// takes configYAML, the scenario's bootstrap override (--config-yaml), over it, and
// drainArgs (envoy.DrainTimeArgs).
func newEnvoyClient(bin envoy.Binary, mode protocol.Mode, dir string, params bootstrap.Params, listenerPort int, configYAML string, drainArgs []string, ca *certs.CA) (*client.Envoy, error) {
	args := append([]string{"--concurrency", "1"}, drainArgs...)
	if configYAML != "" {
		args = append(args, "--config-yaml", configYAML)
	}
	return client.NewEnvoy(client.EnvoyOptions{
		Bootstrap:    envoy.Bootstrap{Mode: mode, Params: params, Path: filepath.Join(dir, "bootstrap.yaml")},
		Process:      envoy.Options{Binary: bin, LogPath: filepath.Join(dir, "envoy.log"), ExtraArgs: args},
		ListenerPort: listenerPort,
		TLSRoots:     ca.Pool(),
	})
}

// request sends one request through the client and gathers every piece of evidence of
// who answered it: the answer itself (Probe), the backend's own log and, through Envoy,
// its access log. The simulated client's answer is computed: there is nothing more.
func (d *dataPlane) request(ctx context.Context, q scenario.Request, requestID string) Observation {
	o := d.probe(ctx, q, requestID)
	if o.Simulated || o.Status == 0 {
		return o
	}
	o.LogBackend = d.backends.logged(requestID)
	if d.client.Kind() != client.KindEnvoy {
		return o
	}
	// The access log is flushed every 100 ms (--file-flush-interval-msec); wait for it.
	actx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if a, err := envoy.WaitAccess(actx, d.accessLog, requestID); err == nil {
		o.Access = &a
		o.Flags = a.Flags
		o.Upstream = a.UpstreamHost
	}
	o.Class = Classify(o.Status, o.Flags)
	return o
}

// probe sends one request and keeps only what the answer itself says (status and the
// backend named in the body): the traffic window sends many, and joins Envoy's access
// log once at the end.
func (d *dataPlane) probe(ctx context.Context, q scenario.Request, requestID string) Observation {
	p, ok := d.client.(client.Prober)
	if !ok {
		return Observation{RequestID: requestID, Path: q.Path, Error: "the client has no data plane", Class: ClassNoResponse}
	}
	return p.Probe(ctx, q, requestID)
}

// errNotHeld is hold's error for a client that cannot be held.
var errNotHeld = errors.New("hold: the client cannot be held")

// hold keeps the client from talking to the control plane until release is called.
func (d *dataPlane) hold(ctx context.Context) (release func() error, err error) {
	h, ok := d.client.(client.Holder)
	if !ok {
		return nil, errNotHeld
	}
	return h.Hold(ctx)
}

// admin is the client's Envoy admin view (nil for a client without one). Checks that
// need it are listed as not checked.
func (d *dataPlane) admin() client.AdminViewer {
	a, _ := d.client.(client.AdminViewer)
	return a
}

// backendSet is the inventory backends, shared by the run and its proxy: a fault test
// may stop and restart one from another goroutine while requests are being checked.
type backendSet struct {
	mu   sync.Mutex
	list []*inventory.Backend
}

func (s *backendSet) all() []*inventory.Backend {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.list)
}

// logged is the backend whose own log has requestID ("" when none has).
func (s *backendSet) logged(requestID string) string {
	name := ""
	for _, b := range s.all() {
		if _, ok, _ := b.Lookup(requestID); ok {
			name = b.Name()
		}
	}
	return name
}

func (s *backendSet) add(b *inventory.Backend) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list, b)
}

// replace swaps the backend named like b for b.
func (s *backendSet) replace(b *inventory.Backend) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, old := range s.list {
		if old.Name() == b.Name() {
			s.list[i] = b
		}
	}
}

// Stop stops every backend (a session.Backend: the run's session stops them after its
// control plane).
func (s *backendSet) Stop(ctx context.Context) error {
	var errs []error
	for _, b := range s.all() {
		errs = append(errs, b.Stop(ctx))
	}
	return errors.Join(errs...)
}

// at names the backend listening on port ("" when none): where the simulated client's
// computed endpoint leads.
func (s *backendSet) at(port int) string {
	name := ""
	for _, b := range s.all() {
		if b.Port() == port {
			name = b.Name()
		}
	}
	return name
}
