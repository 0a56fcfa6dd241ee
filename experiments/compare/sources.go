package compare

import "github.com/xds-workbench/lab/experiments/cite"

// What a renderer needs of an attribution beyond the printed Attribution and Source:
// the sources themselves (the HTML report numbers them as notes) and, for a verdict with
// none, why. The verdict stays unexported: only Compare and CompareMatrix settle it.

// Cites are the sources the finding's attribution cites (none when unattributed).
func (f Finding) Cites() []cite.Source { return f.verdict.srcs }

// Why is why the finding is not attributed ("" when it is).
func (f Finding) Why() string { return f.verdict.why }

// Cites are the sources the difference's attribution cites (none when unattributed).
func (d ClientDifference) Cites() []cite.Source { return d.verdict.srcs }

// Why is why the difference is not attributed ("" when it is).
func (d ClientDifference) Why() string { return d.verdict.why }

// Cites are the sources of the matrix finding's attribution (none when unattributed).
func (f MatrixFinding) Cites() []cite.Source { return f.srcs }

// Cites is the protocol section that makes the difference so.
func (d ProtocolDifference) Cites() cite.Source { return d.src }

// Cites is the option or component the configuration difference is, as package cite
// has it.
func (d ConfigDifference) Cites() cite.Source { return d.src }
