package client_test

import (
	"context"
	"testing"

	"github.com/xds-workbench/lab/experiments/client"
	"github.com/xds-workbench/lab/experiments/grpcclient"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/scenario"
)

// caps lists the optional capabilities c has, by type assertion, as a caller finds them.
func caps(c client.Client) map[string]bool {
	_, proc := c.(client.Process)
	_, hold := c.(client.Holder)
	_, probe := c.(client.Prober)
	_, admin := c.(client.AdminViewer)
	_, csds := c.(client.CSDSViewer)
	_, state := c.(client.StateViewer)
	return map[string]bool{"process": proc, "holder": hold, "prober": probe, "admin": admin, "csds": csds, "state": state}
}

// TestCapabilitiesByKind: each kind has exactly the capabilities its client has, so a
// caller that asserts one (Envoy's admin, grpc-go's CSDS, the simulated state) never
// reaches a client without it.
func TestCapabilitiesByKind(t *testing.T) {
	sim, err := client.NewSim(client.SimOptions{Mode: protocol.SotW, Addr: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		c    client.Client
		kind client.Kind
		want []string
	}{
		{&client.Envoy{}, client.KindEnvoy, []string{"process", "holder", "prober", "admin"}},
		{client.NewGRPC(grpcclient.StartOptions{}, nil), client.KindGRPC, []string{"process", "holder", "prober", "csds"}},
		{sim, client.KindSimulated, []string{"holder", "prober", "state"}},
	}
	for _, tc := range cases {
		if tc.c.Kind() != tc.kind {
			t.Errorf("Kind %q, want %q", tc.c.Kind(), tc.kind)
		}
		got := caps(tc.c)
		want := map[string]bool{}
		for _, w := range tc.want {
			want[w] = true
		}
		for name, has := range got {
			if has != want[name] {
				t.Errorf("%s: %s capability %v, want %v", tc.kind, name, has, want[name])
			}
		}
	}
}

// TestNotStartedClients: a client never started is stopped already, has no process, and
// its probe says the data plane is not running instead of failing.
func TestNotStartedClients(t *testing.T) {
	ctx := context.Background()
	g := client.NewGRPC(grpcclient.StartOptions{}, nil)
	for _, c := range []client.Client{&client.Envoy{}, g} {
		if err := c.Stop(ctx); err != nil {
			t.Errorf("%s: Stop before Start: %v", c.Kind(), err)
		}
		if err := c.Crash(ctx); err == nil {
			t.Errorf("%s: Crash before Start succeeded", c.Kind())
		}
		if c.Exited() != nil || c.Err() != nil || c.(client.Process).PID() != 0 {
			t.Errorf("%s: a process before Start", c.Kind())
		}
		if _, err := c.(client.Holder).Hold(ctx); err == nil {
			t.Errorf("%s: Hold before Start succeeded", c.Kind())
		}
	}
	o := g.Probe(ctx, scenario.Request{Path: "/"}, "r1")
	if o.Class != client.ClassNoResponse || o.Client != string(client.KindGRPC) {
		t.Errorf("probe of a client not running: %+v", o)
	}
}
