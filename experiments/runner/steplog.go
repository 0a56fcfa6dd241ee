package runner

import (
	"fmt"

	"github.com/xds-workbench/lab/shared/scenario"
)

// stepLog is where the run stands in its scenario: the step in progress (its name, which
// labels xds.log's events and request IDs, and its state while it runs), each finished
// step's result for summary.json, and what passed steps leave for later ones: the last
// answer the proxy must keep giving while the control plane is down, and Envoy's stats
// as last read (the base of the next step's rises).
type stepLog struct {
	name string   // the step in progress ("" before the first)
	cur  *stepRun // the step in progress while it runs (nil between steps)
	// results are the finished steps' outcomes, in order (summary.json's steps).
	results []StepResult
	// last names the run's last step: its count stops the load.
	last string
	// lastGood is the first request expectation of the last passed step that had one:
	// what the proxy must keep answering while the control plane is down.
	lastGood scenario.RequestExpect
	// envoyStats are Envoy's stats as the last checkpoint read them.
	envoyStats map[string]string
}

// passed records that st passed in dur ms, with findings client-view disagreements.
func (l *stepLog) passed(st scenario.Step, dur float64, findings int) {
	l.results = append(l.results, StepResult{Name: st.Name, Checkpoint: st.Checkpoint + ".json", Passed: true, DurationMS: dur,
		ClientViewFindings: findings})
}

// fail records that st failed after dur ms because of why, with findings client-view
// disagreements, and returns the run's error for it.
func (l *stepLog) fail(st scenario.Step, why string, dur float64, findings int) error {
	l.results = append(l.results, StepResult{Name: st.Name, Checkpoint: st.Checkpoint + ".json", Failure: why, DurationMS: dur,
		ClientViewFindings: findings})
	return fmt.Errorf("step %s: %s", st.Name, why)
}

// interrupted records that the run was stopped at step and returns the run's error.
func (l *stepLog) interrupted(step string) error {
	l.results = append(l.results, StepResult{Name: step, Failure: "interrupted"})
	return fmt.Errorf("%w at %s", ErrInterrupted, step)
}
