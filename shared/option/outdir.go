package option

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// OptionOut is the option an *Error from CheckOut names: an output directory.
const OptionOut = "out"

// CheckOut refuses an output directory that is not a directory, or one for which holds
// names what it already holds (two runs' evidence would mix); want says what would do.
// "" and a directory that does not exist are fine. A refusal is an *Error naming
// OptionOut, with dir as its value.
func CheckOut(dir string, holds func(dir string) (string, bool), want string) error {
	if dir == "" {
		return nil
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is the value, already shown
		}
		return &Error{Option: OptionOut, Value: dir, Err: err}
	case !st.IsDir():
		return &Error{Option: OptionOut, Value: dir, Err: fmt.Errorf("not a directory (want %s)", want)}
	}
	if what, ok := holds(dir); ok {
		return &Error{Option: OptionOut, Value: dir, Err: fmt.Errorf("already holds %s (want %s)", what, want)}
	}
	return nil
}

// CheckOutEmpty is CheckOut for a directory that must be new or empty.
func CheckOutEmpty(dir string) error {
	return CheckOut(dir, HoldsAnything, "a new or empty directory")
}

// HoldsAnything reports whether dir has any entry, and names the first.
func HoldsAnything(dir string) (string, bool) {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		return "", false
	}
	if len(ents) == 1 {
		return "a file (" + ents[0].Name() + ")", true
	}
	return fmt.Sprintf("%d files (%s, ...)", len(ents), ents[0].Name()), true
}
