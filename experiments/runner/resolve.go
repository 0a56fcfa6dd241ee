package runner

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/xds-workbench/lab/experiments/controlplane"
	"github.com/xds-workbench/lab/experiments/load"
	"github.com/xds-workbench/lab/shared/option"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/scenario"
)

// OptionSteps is the option an *option.Error from Resolve names for Steps; an unusable
// Out is option.OptionOut.
const OptionSteps = "steps"

// CheckLoad refuses a steady load (Load, when its Rate is set) the load generator would
// refuse, as an *option.Error naming OptionLoad with the rate as its value.
func (o *Options) CheckLoad() error {
	if o.Load.Rate == 0 {
		return nil
	}
	lo := load.Options{Rate: o.Load.Rate, Connections: o.Load.Connections, Protocol: o.Load.Protocol, Target: "http://127.0.0.1:1/"}
	if err := lo.Check(); err != nil {
		return &option.Error{Option: OptionLoad, Value: strconv.Itoa(o.Load.Rate), Err: err}
	}
	return nil
}

// Resolve fills the defaults that depend on other options and checks what a run can
// check before anything starts; nothing has started yet. In SotW an unset Versions or
// NackPolicy is what the cache does (controlplane.SotWDefaults); Steps must name steps of
// Scenario; Out must not hold a run already (CheckOut). A refusal is an *option.Error.
func (o *Options) Resolve() error {
	if o.Mode == protocol.SotW {
		versions, policy := controlplane.SotWDefaults(o.Cache)
		if o.Versions == "" {
			o.Versions = versions
		}
		if o.NackPolicy == "" {
			o.NackPolicy = policy
		}
	}
	if len(o.Steps) > 0 && o.Scenario != nil {
		if _, err := scenario.Select(o.Scenario.Steps, o.Steps); err != nil {
			return &option.Error{Option: OptionSteps, Value: strings.Join(o.Steps, ","), Err: err}
		}
	}
	return CheckOut(o.Out)
}

// CheckOut refuses a run directory that is not a directory or already holds a run:
// appending to an earlier run's xds.log would mix two runs' evidence.
func CheckOut(dir string) error {
	holdsRun := func(dir string) (string, bool) {
		_, err := os.Stat(filepath.Join(dir, "xds.log"))
		return "a run (xds.log)", err == nil
	}
	return option.CheckOut(dir, holdsRun, "a new directory or one without a run")
}
