package compare

import (
	"fmt"

	"github.com/xds-workbench/lab/experiments/cite"
	"github.com/xds-workbench/lab/experiments/clientview"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
)

// Clients is the report's section for two runs of different clients (run.json "client":
// Envoy against grpc-go, both SotW): where the clients' own behaviour differs, read from
// each run's xds.log, each difference attributed to one client's implementation or to
// the protocol. The protocol only when the xDS protocol document says so and both
// clients behave so; everything else names each client's component.
type Clients struct {
	// Names are A's and B's clients ("Envoy", "grpc-go").
	Names [2]string `json:"names"`
	// Differences are computed from the events; none is hand-written.
	Differences []ClientDifference `json:"differences"`
}

// ClientDifference is one behaviour of the two clients side by side.
type ClientDifference struct {
	// Topic is subscription, ack-names, nack, nack-view (the client's own view of what it
	// kept), nack-reason, nack-rate, reconnect, reconnect-delay or does-not-exist.
	Topic string `json:"topic"`
	Step  string `json:"step,omitempty"`
	Type  string `json:"type,omitempty"`
	// Runs are what A's and B's client did, as the evidence shows it.
	Runs [2]string `json:"runs"`
	// Same is true when both did the same (then the attribution may be the protocol).
	Same        bool   `json:"same"`
	Text        string `json:"text"`
	Attribution string `json:"attribution"`
	Source      string `json:"source"`
	// verdict is the attribution with its sources.
	verdict attribution
}

// clientKind is the run's client from run.json ("" when unknown).
func clientKind(r *Run) string {
	if r.Meta == nil {
		return ""
	}
	return r.Meta.Client
}

// Per-client implementation sources, by topic (package cite, checked against Envoy 1.40
// and grpc-go v1.85.0).
var clientSources = map[string]map[string]cite.Source{
	clientview.ClientEnvoy: {
		"subscription":    cite.EnvoySubscription,
		"ack-names":       cite.EnvoyAckNames,
		"nack-reason":     cite.EnvoyNackReason,
		"nack-view":       cite.EnvoyNackView,
		"nack-rate":       cite.EnvoyNackRate,
		"reconnect":       cite.EnvoyReconnect,
		"reconnect-delay": cite.EnvoyReconnectDelay,
		"does-not-exist":  cite.EnvoyDoesNotExist,
	},
	clientview.ClientGRPC: {
		"subscription":    cite.GRPCSubscription,
		"ack-names":       cite.GRPCAckNames,
		"nack-reason":     cite.GRPCNackReason,
		"nack-view":       cite.GRPCNackView,
		"nack-rate":       cite.GRPCNackRate,
		"reconnect":       cite.GRPCReconnect,
		"reconnect-delay": cite.GRPCReconnectDelay,
		"does-not-exist":  cite.GRPCDoesNotExist,
	},
}

// sides is each run's client source for topic, then extra: an implementation verdict
// whose sources say "A" and "B" apart in the report ("A Envoy (...) ...; B grpc-go
// (...) ...").
func sides(kinds [2]string, topic string, extra ...cite.Source) attribution {
	var a attribution
	a.attr = AttrImplementation
	for i, k := range kinds {
		if s, ok := clientSources[k][topic]; ok {
			s.Who = RunLabel(i) + " " + s.Who
			a.srcs = append(a.srcs, s)
			a.sides[i] = append(a.sides[i], s)
		}
	}
	a.srcs = append(a.srcs, extra...)
	return a
}

// compareClients is the Clients section, or nil when the runs' clients are the same or
// not both known.
func compareClients(runs [2]*Run, steps []string) *Clients {
	kinds := [2]string{clientKind(runs[0]), clientKind(runs[1])}
	if kinds[0] == "" || kinds[1] == "" || kinds[0] == kinds[1] {
		return nil
	}
	c := &Clients{Names: [2]string{clientName(runs[0]), clientName(runs[1])}, Differences: []ClientDifference{}}
	var ev [2]clientEvidence
	in := set(steps)
	for i, r := range runs {
		ev[i] = gatherClientEvidence(r, in)
	}
	c.Differences = append(c.Differences, subscriptionDiffs(kinds, ev)...)
	c.Differences = append(c.Differences, nackDiffs(kinds, ev, steps)...)
	c.Differences = append(c.Differences, reconnectDiffs(kinds, ev)...)
	c.Differences = append(c.Differences, doesNotExistDiffs(kinds, ev, steps)...)
	for i := range c.Differences {
		d := &c.Differences[i]
		d.verdict = d.verdict.checked()
		d.Attribution, d.Source = d.verdict.attr, d.verdict.source()
		d.Text = differenceText(c.Names, *d)
	}
	return c
}

func differenceText(names [2]string, d ClientDifference) string {
	where := d.Topic
	if d.Type != "" {
		where = d.Type + " " + where
	}
	if d.Step != "" {
		where = words.Step(d.Step) + ": " + where
	}
	if d.Runs[0] == d.Runs[1] {
		return fmt.Sprintf("%s: both (%s, %s) %s", where, names[0], names[1], d.Runs[0])
	}
	return fmt.Sprintf("%s: A (%s) %s; B (%s) %s", where, names[0], d.Runs[0], names[1], d.Runs[1])
}
