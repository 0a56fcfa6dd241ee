package benchcore

import (
	"errors"
	"fmt"
	"slices"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/suggest"
)

// Names are the list options as a command line names them, each name already read by
// its parser (protocol.ParseMode, CheckSotWVersion, publish.ParseCache, ParseShape).
type Names struct {
	Modes, SotWVersions, Caches, OnDemand []string
}

// Resolve is o with the lists in n and the defaults that depend on other options:
// grpc-go clients run SotW and the endpoint workload, the on-demand axis delta, unless
// the modes (modesSet) or workloads (workloadsSet) were chosen (Validate then refuses
// them).
func (o Options) Resolve(n Names, modesSet, workloadsSet bool) Options {
	o.Modes = names[protocol.Mode](n.Modes)
	o.SotWVersions = names[publish.VersionStrategy](n.SotWVersions)
	o.Caches = names[publish.Cache](n.Caches)
	o.OnDemand = nil
	for _, s := range n.OnDemand {
		od, _ := ParseShape(s) // read already
		o.OnDemand = append(o.OnDemand, od)
	}
	if o.Client == ClientGRPC {
		if !modesSet {
			o.Modes = []protocol.Mode{protocol.SotW} // grpc-go has no delta client
		}
		if !workloadsSet {
			o.Workloads = []string{WorkloadEndpoint}
		}
	}
	if len(o.OnDemand) > 0 && !modesSet {
		o.Modes = []protocol.Mode{protocol.Delta} // on demand is delta only
	}
	return o
}

// names is a list of names as their type.
func names[T ~string](ss []string) []T {
	var out []T
	for _, s := range ss {
		out = append(out, T(s))
	}
	return out
}

// CheckThrough reads one way to the control plane (Through); its error is the problem
// alone.
func CheckThrough(s string) error {
	if s != ThroughDirect && s != ThroughTap {
		return errors.New("unknown way (want direct or tap)")
	}
	return nil
}

// CheckWorkload reads one workload name; its error is the problem alone.
func CheckWorkload(s string) error {
	if !slices.Contains(Workloads, s) {
		return fmt.Errorf("unknown workload (want %s)", suggest.OrList(Workloads))
	}
	return nil
}

// CheckSotWVersion reads one SotW version strategy; "" (the library's default) is not a
// name to give. Its error is the problem alone.
func CheckSotWVersion(s string) error {
	if s == "" {
		return errors.New("empty (want uniform or per-type)")
	}
	if _, err := publish.ParseVersionStrategy(s); err != nil {
		return errors.New("unknown version strategy (want uniform or per-type)")
	}
	return nil
}
