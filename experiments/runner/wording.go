package runner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/shared/scenario"
)

// The progress speaks of the client in use. The pack's steps are written for Envoy and
// keep their names with every client (envoy-restart, so runs of both clients compare
// step by step), and their expectations use Envoy's response flags ("503 NC"), which the
// grpc client reads as its class (flagHolds); these say what that means for the client
// in use.

// clientNoun names the data plane in progress lines.
func clientNoun(kind string) string {
	switch kind {
	case ClientGRPC:
		return "grpc client"
	case "simulated": // simProxy.Kind
		return "simulated client"
	}
	return kind
}

// stepHeader is a step's first progress line: "step 5/8 envoy-restart", and for a
// restart or kill of a client that is not Envoy, what it restarts.
func stepHeader(st scenario.Step, i, n int, kind string) string {
	h := fmt.Sprintf("step %d/%d %s", i+1, n, st.Name)
	if kind == "envoy" {
		return h
	}
	switch st.Action {
	case scenario.RestartEnvoy:
		h += " (restarts the " + clientNoun(kind) + ")"
	case scenario.KillEnvoy:
		h += " (kills and restarts the " + clientNoun(kind) + ")"
	}
	return h
}

// passedLine is the progress line of a step that passed: what it proves and, for the
// grpc client, what its failed RPCs were, since the step speaks of Envoy's response
// flags ("gives 503 NC ... with the grpc client: grpc Unavailable, a config failure").
func passedLine(st scenario.Step, ms float64, cp *Checkpoint) string {
	l := fmt.Sprintf("%s ok (%.0f ms)", st.Name, ms)
	if st.Proves != "" {
		l += ": " + st.Proves
	}
	if cp == nil {
		return l
	}
	var seen []string
	for _, rr := range cp.Requests {
		o := rr.Request
		if o.Client != ClientGRPC || o.GRPCStatus == "" || o.GRPCStatus == "OK" {
			continue
		}
		w := "grpc " + o.GRPCStatus
		if o.Class != "" {
			w += ", " + articled(o.Class)
		}
		if !slices.Contains(seen, w) {
			seen = append(seen, w)
		}
	}
	if len(seen) > 0 {
		l += " (with the grpc client: " + strings.Join(seen, "; ") + ")"
	}
	return l
}

// articled is a class with its article: "a config failure", "an upstream failure".
func articled(class string) string {
	if strings.ContainsRune("aeiou", rune(class[0])) {
		return "an " + class
	}
	return "a " + class
}
