// Package progress words the progress lines of long work (lab sweep's runs, lab bench's
// configurations) alike: "[k/total]" for the item that starts and, once one is done, an
// estimate of the time left at the pace so far. It only formats; the callers own their
// clocks and writers, so its output is exact under test. Writer carries a command's
// progress lines to its standard output and drops them, said once, when that closes
// (lab run | head): lost progress never costs the run.
package progress

import (
	"fmt"
	"time"
)

// Mark is "[k/total]": the k-th of total items, counted from 1.
func Mark(k, total int) string { return fmt.Sprintf("[%d/%d]", k, total) }

// Left is " (about 1m20s left)": the total-done items still to do at the mean pace of the
// done ones, elapsed for all of them, to the second. It is "" before any item is done
// (nothing to extrapolate from) and once every one is.
func Left(elapsed time.Duration, done, total int) string {
	if done <= 0 || done >= total {
		return ""
	}
	left := time.Duration(float64(elapsed) / float64(done) * float64(total-done))
	return fmt.Sprintf(" (about %s left)", left.Round(time.Second))
}
