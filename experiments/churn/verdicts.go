package churn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
)

// ErrFailed is a soak that ran and failed a verdict (lab churn exits non-zero).
var ErrFailed = errors.New("churn soak failed a verdict")

// RunAndReport is `lab churn`: the soak of o with its progress lines on progress, then a
// line per verdict and where the report is on out. It returns ErrFailed when a verdict
// failed, and New's refusal of an option as it is.
func RunAndReport(ctx context.Context, o Options, out, progress io.Writer) error {
	s, err := New(o)
	if err != nil {
		return err
	}
	res, err := s.Run(ctx, progress)
	if err != nil {
		return err
	}
	for _, v := range res.Verdicts {
		mark := "pass"
		if !v.Passed {
			mark = "FAIL"
		}
		fmt.Fprintf(out, "%s: %s %v %v\n", v.Name, mark, v.Figures, v.Reasons)
	}
	fmt.Fprintf(out, "report: %s\n", filepath.Join(s.Options().Out, "report.md"))
	if !res.Passed {
		return ErrFailed
	}
	return nil
}
