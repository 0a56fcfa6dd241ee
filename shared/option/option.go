// Package option is how a library refuses an option value without knowing the flags
// that set it. A library validates each of its own options once and returns an *Error
// naming the option in words ("config yaml", "sotw versions"); only the command line
// (cmd/lab) maps those names to its flags and words the refusal as a flag error. So a
// rule lives with the package that owns the option, and a flag's name lives in cmd/lab.
package option

import "fmt"

// Error is an option value refused. Option names the option in words, Value is its
// value as the library writes it ("" when the value is not worth repeating, such as a
// YAML document), Item the element of a list at fault when one is, and Err what is wrong:
// a rule error of the library when another option's value is the reason, so that a
// caller can word the refusal in its own terms.
type Error struct {
	Option string
	Value  string
	Item   string
	Err    error
}

func (e *Error) Error() string {
	if e.Value == "" {
		return e.Option + ": " + e.Err.Error()
	}
	return e.Option + " " + e.Value + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// RangeError is a count outside its bounds.
type RangeError struct{ Min, Max int }

func (e *RangeError) Error() string { return fmt.Sprintf("outside %d-%d", e.Min, e.Max) }
