package sweep

import (
	"fmt"
	"io"

	"github.com/xds-workbench/lab/experiments/table"
)

// Render writes the report as a table, a row per rate, and the sweep's conclusion.
func Render(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "%s, %s/%s, %d %s connection(s), %d run(s) per rate, %s\n\n", rep.Scenario, rep.Mode, orDash(rep.Cache),
		rep.Connections, rep.Protocol, rep.Repeat, rep.Started.Format("2006-01-02 15:04 UTC"))
	t := table.Table{Head: []string{"RATE", "PASSED", "REQUESTS", "NON-2XX", "MIN ACHIEVED", "P99 ms", "MAX ms",
		"PUBLISH-TO-ACK ms", "RATIO", "ENVOY CPU", "SUSTAINED"}, RightHead: true}
	for _, p := range rep.Points {
		rate, share, p99, mx := "no load", "-", "-", "-"
		if p.Rate > 0 {
			rate = fmt.Sprint(p.Rate)
			share = fmt.Sprintf("%.0f%%", 100*p.MinShare)
			p99, mx = fmt.Sprintf("%.1f", p.P99MS), fmt.Sprintf("%.1f", p.MaxMS)
		}
		sustained := "yes"
		if !p.Sustained {
			sustained = "NO"
		}
		t.Rows = append(t.Rows, table.RightCells(rate, fmt.Sprintf("%d/%d", p.Passed, p.Runs), fmt.Sprint(p.Requests), fmt.Sprint(p.Failed),
			share, p99, mx, opt(p.PublishToAckMS, "%.2f"), opt(p.AckRatio, "%.2f"), opt(p.EnvoyCPUPercent, "%.0f%%"), sustained))
	}
	_, _ = io.WriteString(w, t.Text(0))
	fmt.Fprintln(w, "\nNON-2XX counts every answer that was not a success, in every step, the ones the scenario")
	fmt.Fprintln(w, "expects (503 NC after a removal, refused while Envoy restarts) too; a run passes only when")
	fmt.Fprintln(w, "no step has more than its traffic expectation allows.")
	fmt.Fprintln(w)
	for _, p := range rep.Points {
		if p.Failure != "" {
			fmt.Fprintf(w, "%s: %s\n", rateText(p.Rate), p.Failure)
		}
	}
	if rep.HighestSustained > 0 {
		fmt.Fprintf(w, "highest rate sustained while the changes land: %d requests/s (every run passed, every step kept %.0f%% of its rate)\n",
			rep.HighestSustained, 100*SustainedShare)
	} else {
		fmt.Fprintln(w, "no rate was sustained while the changes landed")
	}
}

func opt(v *float64, format string) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(format, *v)
}

func orDash(s string) string {
	if s == "" {
		return "snapshot"
	}
	return s
}
