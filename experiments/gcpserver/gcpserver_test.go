package gcpserver

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// yamlSocketAddress is a bootstrap's socket_address, as the admin and every endpoint
// have it.
type yamlSocketAddress struct {
	Address string `yaml:"address"`
	Port    int    `yaml:"port_value"`
}

func TestRewriteBootstrapChangesOnlyAddressesAdminAndNode(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		mode    XDSFlag
		apiType string
	}{{ModeADS, "GRPC"}, {ModeDeltaADS, "DELTA_GRPC"}} {
		t.Run(string(tc.mode), func(t *testing.T) {
			out, err := Bootstrap(ctx, BootstrapConfig{Mode: tc.mode, XDSAddr: "127.0.0.1:21001", ALSAddr: "127.0.0.1:21002", AdminPort: 21003, NodeID: "node-x"})
			if err != nil {
				t.Fatal(err)
			}
			var b struct {
				Admin struct {
					Address struct {
						SocketAddress yamlSocketAddress `yaml:"socket_address"`
					} `yaml:"address"`
				} `yaml:"admin"`
				Dynamic struct {
					ADS struct {
						APIType string `yaml:"api_type"`
					} `yaml:"ads_config"`
				} `yaml:"dynamic_resources"`
				Node struct {
					ID      string `yaml:"id"`
					Cluster string `yaml:"cluster"`
				} `yaml:"node"`
				Static struct {
					Clusters []struct {
						Name string `yaml:"name"`
						LA   struct {
							Endpoints []struct {
								LB []struct {
									Endpoint struct {
										Address struct {
											SocketAddress yamlSocketAddress `yaml:"socket_address"`
										} `yaml:"address"`
									} `yaml:"endpoint"`
								} `yaml:"lb_endpoints"`
							} `yaml:"endpoints"`
						} `yaml:"load_assignment"`
					} `yaml:"clusters"`
				} `yaml:"static_resources"`
			}
			if err := yaml.Unmarshal(out, &b); err != nil {
				t.Fatalf("rewritten bootstrap does not parse: %v\n%s", err, out)
			}
			if a := b.Admin.Address.SocketAddress; a.Address != "127.0.0.1" || a.Port != 21003 {
				t.Errorf("admin = %s:%d, want 127.0.0.1:21003", a.Address, a.Port)
			}
			if b.Dynamic.ADS.APIType != tc.apiType {
				t.Errorf("api_type = %q, want the sample's %q", b.Dynamic.ADS.APIType, tc.apiType)
			}
			if b.Node.ID != "node-x" || b.Node.Cluster != "test-cluster" {
				t.Errorf("node = %+v, want id node-x and the sample's cluster test-cluster", b.Node)
			}
			want := map[string]int{"xds_cluster": 21001, "als_cluster": 21002}
			for _, c := range b.Static.Clusters {
				sa := c.LA.Endpoints[0].LB[0].Endpoint.Address.SocketAddress
				if sa.Address != "127.0.0.1" || sa.Port != want[c.Name] {
					t.Errorf("cluster %s endpoint = %s:%d, want 127.0.0.1:%d", c.Name, sa.Address, sa.Port, want[c.Name])
				}
				delete(want, c.Name)
			}
			if len(want) != 0 {
				t.Errorf("clusters missing from the rewritten bootstrap: %v", want)
			}
		})
	}
}

func TestRewriteBootstrapRefusesNonLoopbackXDS(t *testing.T) {
	_, err := Bootstrap(context.Background(), BootstrapConfig{Mode: ModeADS, XDSAddr: "10.0.0.1:18000", ALSAddr: "127.0.0.1:1", AdminPort: 2, NodeID: "n"})
	if err == nil || !strings.Contains(err.Error(), "not loopback") {
		t.Fatalf("err = %v, want a not-loopback refusal", err)
	}
}

func TestParseBatchesFollowsSnapshots(t *testing.T) {
	lines := []string{
		"2026/12/01 17:00:00 update snapshot v0",
		"2026/12/01 17:00:00 request batch 0, ok 0, failed 3, pass false",
		"2026/12/01 17:00:01 request batch 1, ok 3, failed 0, pass true",
		"2026/12/01 17:00:01 server callbacks fetches=0 requests=9 responses=9",
		"2026/12/01 17:00:02 update snapshot v1",
		"2026/12/01 17:00:02 request batch 0, ok 2, failed 1, pass false",
	}
	got := ParseBatches(lines)
	want := []Batch{
		{Update: 0, Index: 0, OK: 0, Failed: 3, Pass: false, SnapshotName: "v0"},
		{Update: 0, Index: 1, OK: 3, Failed: 0, Pass: true, SnapshotName: "v0"},
		{Update: 1, Index: 0, OK: 2, Failed: 1, Pass: false, SnapshotName: "v1"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d batches %+v, want %+v", len(got), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("batch %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if n := PassedUpdates(got); n != 1 {
		t.Errorf("PassedUpdates = %d, want 1", n)
	}
}

func TestOptionsArgsRefuseBadModeAndPorts(t *testing.T) {
	good := Options{Mode: ModeADS, Port: 1, GatewayPort: 2, ALSPort: 3, UpstreamPort: 4, BasePort: 5, NodeID: "n", Updates: 1, Requests: 1, HTTPListeners: 1, Delay: 250 * time.Millisecond}
	if _, err := good.Args(); err != nil {
		t.Fatalf("good options: %v", err)
	}
	for name, mut := range map[string]func(*Options){
		"mode":    func(o *Options) { o.Mode = "rest" },
		"port":    func(o *Options) { o.Port = 0 },
		"node":    func(o *Options) { o.NodeID = "" },
		"updates": func(o *Options) { o.Updates = 0 },
		"listen":  func(o *Options) { o.HTTPListeners = 0 },
	} {
		o := good
		mut(&o)
		if _, err := o.Args(); err == nil {
			t.Errorf("%s: Args accepted %+v", name, o)
		}
	}
}
