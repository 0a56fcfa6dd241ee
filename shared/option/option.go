// Package option is how a library refuses an option value without knowing the flags
// that set it. A library validates each of its own options once and returns an *Error
// naming the option in words ("config yaml", "sotw versions"); only the command line
// (cmd/lab) maps those names to its flags and words the refusal as a flag error. So a
// rule lives with the package that owns the option, and a flag's name lives in cmd/lab.
package option

import (
	"fmt"
	"strings"
	"time"
)

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

// DurationRange is an inclusive range of durations; as an error, a duration outside it
// ("outside 1s-24h").
type DurationRange struct{ Min, Max time.Duration }

func (r *DurationRange) Error() string { return "outside " + r.String() }

// String is the range as an option's help says it: "1s-24h".
func (r DurationRange) String() string { return ShortDuration(r.Min) + "-" + ShortDuration(r.Max) }

// Check returns r itself as the error when d is outside it.
func (r DurationRange) Check(d time.Duration) error {
	if d < r.Min || d > r.Max {
		return &r
	}
	return nil
}

// ShortDuration is d without zero units: 0, 1h, 10m, 45s, 1m30s.
func ShortDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
