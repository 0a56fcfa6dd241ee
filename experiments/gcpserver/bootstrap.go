package gcpserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/xds-workbench/lab/shared/loopback"
)

// BootstrapConfig says how to rewrite the module's sample bootstrap.
type BootstrapConfig struct {
	// Mode picks sample/bootstrap-<Mode>.yaml: ModeADS (api_type GRPC) or ModeDeltaADS
	// (DELTA_GRPC).
	Mode XDSFlag
	// XDSAddr is where Envoy dials xDS (the xds_cluster endpoint), 127.0.0.1:PORT: the
	// server's Addr, or a tap in front of it.
	XDSAddr string
	// ALSAddr is the als_cluster endpoint (the server's -als), 127.0.0.1:PORT. The
	// snapshots' listeners log to it.
	ALSAddr string
	// AdminPort is Envoy's admin port, on 127.0.0.1.
	AdminPort int
	// NodeID is node.id; it must be the server's -nodeID.
	NodeID string
}

// SampleBootstrap reads the pinned module's sample/bootstrap-<mode>.yaml, unchanged.
func SampleBootstrap(ctx context.Context, mode XDSFlag) ([]byte, error) {
	if mode != ModeADS && mode != ModeDeltaADS {
		return nil, fmt.Errorf("sample bootstrap: mode %q: want %q or %q", mode, ModeADS, ModeDeltaADS)
	}
	dir, err := ModuleDir(ctx)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "sample", "bootstrap-"+string(mode)+".yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sample bootstrap: %w", err)
	}
	return b, nil
}

// Bootstrap is go-control-plane's own sample bootstrap for c.Mode with only these
// changed: the xds_cluster endpoint (c.XDSAddr), the als_cluster endpoint (c.ALSAddr),
// admin on 127.0.0.1:c.AdminPort, node.id. Everything else stays theirs.
func Bootstrap(ctx context.Context, c BootstrapConfig) ([]byte, error) {
	raw, err := SampleBootstrap(ctx, c.Mode)
	if err != nil {
		return nil, err
	}
	return RewriteBootstrap(raw, c)
}

// RewriteBootstrap applies c to a sample bootstrap's YAML (see Bootstrap).
func RewriteBootstrap(raw []byte, c BootstrapConfig) ([]byte, error) {
	_, xdsPort, err := loopback.ParseAddr(c.XDSAddr)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: xDS address: %w", err)
	}
	_, alsPort, err := loopback.ParseAddr(c.ALSAddr)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: ALS address: %w", err)
	}
	if err := loopback.ValidatePort(c.AdminPort); err != nil {
		return nil, fmt.Errorf("bootstrap: admin: %w", err)
	}
	if c.NodeID == "" {
		return nil, fmt.Errorf("bootstrap: no node id")
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("bootstrap: parse sample: %w", err)
	}
	admin, err := field(doc, "admin", "address", "socket_address")
	if err != nil {
		return nil, err
	}
	admin["address"], admin["port_value"] = loopback.Host, c.AdminPort
	node, err := field(doc, "node")
	if err != nil {
		return nil, err
	}
	node["id"] = c.NodeID
	for name, port := range map[string]int{"xds_cluster": xdsPort, "als_cluster": alsPort} {
		if err := setClusterEndpoint(doc, name, port); err != nil {
			return nil, err
		}
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: marshal: %w", err)
	}
	return out, nil
}

// field walks nested maps by keys.
func field(m map[string]any, keys ...string) (map[string]any, error) {
	cur := m
	for i, k := range keys {
		next, ok := cur[k].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("bootstrap: sample has no map at %v", keys[:i+1])
		}
		cur = next
	}
	return cur, nil
}

// setClusterEndpoint points the only endpoint of static cluster name at 127.0.0.1:port.
func setClusterEndpoint(doc map[string]any, name string, port int) error {
	sr, err := field(doc, "static_resources")
	if err != nil {
		return err
	}
	clusters, _ := sr["clusters"].([]any)
	for _, c := range clusters {
		cm, ok := c.(map[string]any)
		if !ok || cm["name"] != name {
			continue
		}
		la, err := field(cm, "load_assignment")
		if err != nil {
			return err
		}
		eps, _ := la["endpoints"].([]any)
		n := 0
		for _, e := range eps {
			em, _ := e.(map[string]any)
			lbs, _ := em["lb_endpoints"].([]any)
			for _, lb := range lbs {
				lbm, _ := lb.(map[string]any)
				sa, err := field(lbm, "endpoint", "address", "socket_address")
				if err != nil {
					return fmt.Errorf("%w (cluster %s)", err, name)
				}
				sa["address"], sa["port_value"] = loopback.Host, port
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("bootstrap: cluster %s has %d endpoints, want 1", name, n)
		}
		return nil
	}
	return fmt.Errorf("bootstrap: sample has no static cluster %s", name)
}
