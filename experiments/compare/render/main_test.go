package render

import (
	"fmt"
	"os"
	"testing"
)

// TestMain runs the tests in experiments/compare, beside the committed runs and goldens
// they render (testdata): the goldens name the runs as lab compare is given them there
// ("testdata/sotw"), and generate_test.go writes both where compare's own tests read
// them.
func TestMain(m *testing.M) {
	if err := os.Chdir(".."); err != nil {
		fmt.Fprintln(os.Stderr, "render tests:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
