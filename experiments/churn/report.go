package churn

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"time"
)

// reportMD words a result: the run, the counts and each verdict with its figures.
func reportMD(res *Result) []byte {
	var b bytes.Buffer
	o := res.Options
	verdict := "PASSED"
	if !res.Passed {
		verdict = "FAILED"
	}
	fmt.Fprintf(&b, "# Churn soak: %s\n\n", verdict)
	fmt.Fprintf(&b, "%s, %d simulated clients (half SotW, half delta, each its own gRPC connection, lifetime %s-%s, NACK rate %.2f), %d changes/s, %d Envoys killed every %s-%s, seed %d.\n\n",
		o.Duration, o.Clients, o.LifetimeMin, o.LifetimeMax, o.NackRate, o.PublishRate, o.Envoys, o.KillMin, o.KillMax, o.Seed)
	c := res.Clients
	fmt.Fprintf(&b, "- publishes: %d; Envoy restarts: %d\n", res.Publishes, res.Restarts)
	fmt.Fprintf(&b, "- clients: %d connects, %d leaves, %d ACKs, %d NACKs, %d streams failed early\n", c.Connects, c.Leaves, c.Acks, c.Nacks, c.Failed)
	for _, k := range slices.Sorted(maps.Keys(c.FailedBy)) {
		fmt.Fprintf(&b, "  - %d failed with: %s\n", c.FailedBy[k], k)
	}
	fmt.Fprintf(&b, "- samples: %d, every %s (samples.csv, samples.svg); baseline at %s\n\n", len(res.Samples), o.SampleEvery, o.Baseline.Round(time.Second))
	for _, v := range res.Verdicts {
		mark := "pass"
		if !v.Passed {
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "## %s: %s\n\n", v.Name, mark)
		for _, f := range v.Figures {
			fmt.Fprintf(&b, "- %s\n", f)
		}
		for _, r := range v.Reasons {
			fmt.Fprintf(&b, "- **%s**\n", r)
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}
