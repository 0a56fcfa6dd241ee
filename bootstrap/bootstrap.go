// Package bootstrap renders the Envoy bootstrap files the workbench hands to a real
// Envoy: one for SotW ADS and one for delta ADS. The two templates differ only in
// ads_config.api_type, so any behaviour difference seen in a run comes from the
// protocol and not from the bootstrap.
package bootstrap

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"text/template"

	"github.com/xds-workbench/lab/shared/loopback"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
)

// Defaults used by the CLI and filled in by Render for empty fields.
const (
	DefaultNodeID      = resources.NodeID
	DefaultNodeCluster = "teaching-cluster"
	DefaultXDSAddr     = loopback.DefaultXDSAddr
	DefaultAdminPort   = 9901
)

// Envoy stats settings accepted in Params.Stats (lab bench --envoy-stats).
const (
	// StatsAll keeps Envoy's defaults: every stat of every cluster.
	StatsAll = "all"
	// StatsNoScaledClusters drops the stats of the workbench's scaled clusters
	// (stats_config.stats_matcher excluding the prefix "cluster." +
	// resources.ScaledClusterPrefix) and keeps every other stat, xds_cluster's included.
	// At N = 100,000 Envoy's periodic stats flush walks about 12 million stats otherwise
	// (docs/performance.md, "N = 100,000").
	StatsNoScaledClusters = "no-scaled-clusters"
)

// StatsSettings are the values of Params.Stats, in the order the CLI lists them.
var StatsSettings = []string{StatsAll, StatsNoScaledClusters}

// CheckStats refuses a Params.Stats value that is not one of StatsSettings ("" is
// StatsAll).
func CheckStats(s string) error {
	if s == "" || slices.Contains(StatsSettings, s) {
		return nil
	}
	return fmt.Errorf("unknown Envoy stats setting %q (want %s or %s)", s, StatsAll, StatsNoScaledClusters)
}

// Params are the values substituted into a template.
type Params struct {
	// NodeID is node.id (DefaultNodeID when empty). The control plane keys its
	// snapshot on it, so both sides must agree.
	NodeID string
	// NodeCluster is node.cluster (DefaultNodeCluster when empty); Envoy requires it.
	NodeCluster string
	// XDSAddr is the control plane's "127.0.0.1:PORT".
	XDSAddr string
	// AdminPort is the admin listener port on 127.0.0.1; 0 lets the kernel pick one
	// (read it back with envoy --admin-address-path).
	AdminPort int
	// OnDemandClusters leaves out dynamic_resources.cds_config: Envoy then holds only
	// the clusters it fetches on demand (the on_demand filter's odcds), never the wildcard
	// set. Delta only (resources.OnDemand.CheckMode).
	OnDemandClusters bool
	// Stats is StatsAll ("" too) or StatsNoScaledClusters (CheckStats).
	Stats string
}

//go:embed sotw.yaml delta.yaml
var files embed.FS

// templates are parsed once; a broken embedded template is a build-time bug that the
// tests catch, so Render reports it as an error rather than panicking.
var templates, templatesErr = template.New("bootstrap").
	Funcs(template.FuncMap{"quote": quote}).
	Option("missingkey=error").
	ParseFS(files, "sotw.yaml", "delta.yaml")

// nameRE keeps node names to characters that need no thought in YAML, URLs or logs.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Render returns the bootstrap for mode ("sotw" or "delta") filled with p.
func Render(mode protocol.Mode, p Params) ([]byte, error) {
	if templatesErr != nil {
		return nil, fmt.Errorf("parse embedded bootstrap templates: %w", templatesErr)
	}
	var file string
	switch mode {
	case protocol.SotW:
		file = "sotw.yaml"
	case protocol.Delta:
		file = "delta.yaml"
	default:
		return nil, fmt.Errorf("bootstrap mode %q: must be %q or %q", mode, protocol.SotW, protocol.Delta)
	}
	if err := (resources.OnDemand{Clusters: p.OnDemandClusters}).CheckMode(mode == protocol.SotW); err != nil {
		return nil, err
	}
	if err := CheckStats(p.Stats); err != nil {
		return nil, err
	}
	if p.NodeID == "" {
		p.NodeID = DefaultNodeID
	}
	if p.NodeCluster == "" {
		p.NodeCluster = DefaultNodeCluster
	}
	if !nameRE.MatchString(p.NodeID) {
		return nil, fmt.Errorf("node id %q: use 1-128 letters, digits, '.', '_' or '-'", p.NodeID)
	}
	if !nameRE.MatchString(p.NodeCluster) {
		return nil, fmt.Errorf("node cluster %q: use 1-128 letters, digits, '.', '_' or '-'", p.NodeCluster)
	}
	host, port, err := loopback.ParseAddr(p.XDSAddr)
	if err != nil {
		return nil, fmt.Errorf("xds address: %w", err)
	}
	if p.AdminPort != 0 {
		if err := loopback.ValidatePort(p.AdminPort); err != nil {
			return nil, fmt.Errorf("admin port (0 picks a free one): %w", err)
		}
	}
	data := map[string]any{
		"NodeID":      p.NodeID,
		"NodeCluster": p.NodeCluster,
		"XDSHost":     host,
		"XDSPort":     port,
		"AdminPort":   p.AdminPort,

		"OnDemandClusters": p.OnDemandClusters,
		"StatsExclude":     statsExclude(p.Stats),
	}
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, file, data); err != nil {
		return nil, fmt.Errorf("render %s bootstrap: %w", mode, err)
	}
	return buf.Bytes(), nil
}

// statsExclude is the stats_matcher prefix a stats setting excludes ("" for none).
func statsExclude(stats string) string {
	if stats == StatsNoScaledClusters {
		return "cluster." + resources.ScaledClusterPrefix
	}
	return ""
}

// quote renders s as a double-quoted YAML scalar (JSON strings are valid YAML), so
// a name such as "1" or "true" stays a string.
func quote(s string) (string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("quote %q: %w", s, err)
	}
	return string(b), nil
}
