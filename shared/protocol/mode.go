// Package protocol names the two xDS protocols the workbench serves, records and
// compares: state of the world (SotW) and delta (incremental). It is the one place the
// names "sotw" and "delta" are spelled, so flags, JSON, logs and bootstraps agree on them;
// it imports nothing of the workbench, so every package, bootstrap included, can use it.
package protocol

import "fmt"

// Mode is an xDS protocol. It is a string on the wire (xds.log, summary.json, flags),
// so encoding a Mode is encoding its name.
type Mode string

// The protocols.
const (
	SotW  Mode = "sotw"
	Delta Mode = "delta"
)

// Modes are the protocols the workbench serves and records, SotW first.
var Modes = []Mode{SotW, Delta}

// String is the protocol's name as flags and logs spell it.
func (m Mode) String() string { return string(m) }

// Check refuses a mode that is not one of Modes: the one check every package that takes
// a mode from a caller makes.
func (m Mode) Check() error {
	if m == SotW || m == Delta {
		return nil
	}
	return &UnknownModeError{Mode: string(m)}
}

// ParseMode reads a protocol name typed as text (a flag, a scenario's YAML) and refuses
// any other. JSON decodes straight into a Mode, so its readers call Check instead.
func ParseMode(s string) (Mode, error) {
	m := Mode(s)
	if err := m.Check(); err != nil {
		return "", err
	}
	return m, nil
}

// UnknownModeError is a mode that is not one of Modes.
type UnknownModeError struct{ Mode string }

func (e *UnknownModeError) Error() string {
	return fmt.Sprintf("unknown mode %q (want sotw or delta)", e.Mode)
}
