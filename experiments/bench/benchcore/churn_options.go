package benchcore

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xds-workbench/lab/experiments/inventory"
	"github.com/xds-workbench/lab/experiments/load"
)

// The churn axis (--churn): high-frequency endpoint churn under steady load through one
// real Envoy, the endpoint set of cluster 0 changing through EDS alone (ChurnEDS) or
// through a CDS update of the cluster with its EDS (ChurnCDS), measured as request
// latency (experiments/bench/churn).
const (
	// ChurnEDS changes cluster 0's ClusterLoadAssignment only: the cluster is untouched.
	ChurnEDS = "eds"
	// ChurnCDS changes cluster 0 itself (its connect_timeout moves by a millisecond)
	// together with its ClusterLoadAssignment: every update is a cluster update.
	ChurnCDS = "cds"
)

// ChurnModes lists the churn modes in the order the axis runs them.
var ChurnModes = []string{ChurnEDS, ChurnCDS}

// Defaults and bounds of the churn axis.
const (
	// DefaultChurnRequests is the requests each churn configuration measures, and the
	// floor below which ChurnRequests is refused unless ChurnFewRequests is set.
	DefaultChurnRequests = 10_000
	MaxChurnRequests     = 1_000_000
	// DefaultChurnRate is the steady load, requests per second through Envoy.
	DefaultChurnRate = 1000
	// DefaultChurnEvery is the interval between two updates (an update waits for the
	// previous one to show in the data plane first).
	DefaultChurnEvery = 100 * time.Millisecond
	MinChurnEvery     = 10 * time.Millisecond
	// DefaultConnCost is each backend's delay on a connection's first request
	// (inventory.Behaviour.ConnDelay): a stand-in for a handshake.
	DefaultConnCost = 20 * time.Millisecond
)

// The option names of the churn axis' refusals.
const (
	OptionChurn         = "churn"
	OptionChurnRequests = "churn requests"
	OptionChurnRate     = "churn rate"
	OptionChurnEvery    = "churn every"
	OptionConnCost      = "connection cost"
)

// ErrChurnNeedsEnvoy: the churn axis sends its load through Envoy's listener.
var ErrChurnNeedsEnvoy = errors.New("the churn axis runs real Envoy only: its steady load goes through Envoy's listener and its figures are Envoy's connection counters")

// validateChurn checks the churn axis against the other options (Validate calls it
// once the rest is checked). Every refusal is an *OptionError.
func (o *Options) validateChurn() error {
	if len(o.Churn) == 0 {
		return nil
	}
	if err := checkList(OptionChurn, o.Churn, "give eds, cds or both", CheckChurn); err != nil {
		return err
	}
	switch {
	case o.Client != ClientEnvoy:
		return refuse(OptionClient, o.Client, ErrChurnNeedsEnvoy)
	case o.Envoys > 1:
		return refuse(OptionEnvoys, fmt.Sprint(o.Envoys), errors.New("the churn axis runs one Envoy"))
	case len(o.OnDemand) > 0:
		return refuse(OptionChurn, strings.Join(o.Churn, ","), errors.New("the churn axis and the on-demand axis cannot be combined"))
	case slices.Contains(o.Through, ThroughTap):
		return refuse(OptionThrough, strings.Join(o.Through, ","), errors.New("the churn axis runs direct only"))
	case !slices.Equal(o.Workloads, DefaultWorkloads):
		return &OptionError{Option: OptionWorkloads, Value: strings.Join(o.Workloads, ","), Err: errors.New("the churn axis runs its own endpoint churn (leave --workload out)")}
	}
	return o.checkChurnCounts()
}

func (o *Options) checkChurnCounts() error {
	if o.ChurnRequests == 0 {
		o.ChurnRequests = DefaultChurnRequests
	}
	if o.ChurnRate == 0 {
		o.ChurnRate = DefaultChurnRate
	}
	if o.ChurnEvery == 0 {
		o.ChurnEvery = DefaultChurnEvery
	}
	if o.ConnCost == 0 {
		o.ConnCost = DefaultConnCost
	}
	least := DefaultChurnRequests
	if o.ChurnFewRequests {
		least = 1
	}
	if o.ChurnRequests < least || o.ChurnRequests > MaxChurnRequests {
		return refuse(OptionChurnRequests, fmt.Sprint(o.ChurnRequests), &RangeError{Min: least, Max: MaxChurnRequests})
	}
	if err := checkCount(OptionChurnRate, o.ChurnRate, maxChurnRate); err != nil {
		return err
	}
	if o.ChurnEvery < MinChurnEvery {
		return refuse(OptionChurnEvery, o.ChurnEvery.String(), fmt.Errorf("below %s", MinChurnEvery))
	}
	if o.ConnCost < 0 || o.ConnCost > maxConnCost {
		return refuse(OptionConnCost, o.ConnCost.String(), fmt.Errorf("want 0..%s", maxConnCost))
	}
	return nil
}

// CheckChurn refuses a --churn mode that is not one of ChurnModes; its error is the
// problem alone.
func CheckChurn(s string) error {
	if slices.Contains(ChurnModes, s) {
		return nil
	}
	return fmt.Errorf("unknown churn %q (want eds or cds)", s)
}

// Bounds the churn options share with the load generator and the backends.
const (
	maxChurnRate = load.MaxRate
	maxConnCost  = inventory.MaxDelay
)
