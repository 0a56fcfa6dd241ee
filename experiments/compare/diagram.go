package compare

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// Participants of a sequence diagram.
const (
	ControlPlane = "control-plane"
	Client       = "client"
	DataPlane    = "data-plane"
)

// Message kinds. KindRequest is a request that is not an ACK or NACK (a subscription,
// a change of it, a resume after reconnect, a re-request), labelled by what it did;
// KindStale is a SotW request the server dropped because its nonce was not the latest.
const (
	KindPublish     = "publish"
	KindSend        = "send"
	KindAck         = "ack"
	KindNack        = "nack"
	KindUnmatched   = "unmatched"
	KindDataPlane   = "dataplane"
	KindStreamOpen  = "stream_open"
	KindStreamClose = "stream_close"
	KindRefused     = "refused"
	KindRequest     = "request"
	KindStale       = "stale"
	// KindOnDemand is an on-demand subscribe (xdslog.RequestOnDemand): a request traffic
	// asked for, drawn apart from the other requests.
	KindOnDemand = "on_demand"
)

// Diagram is the parsed sequence of one step of one run: every recorded message, in time
// order. Renderers cap long steps; the structure never does, so a test (or a JSON reader)
// can check every send, ACK and NACK.
type Diagram struct {
	Step string `json:"step"`
	// Run is the run's label, "A" or "B".
	Run string `json:"run"`
	// Mode and ClientName name the participants ("Envoy", "simulated client").
	Mode       protocol.Mode `json:"mode"`
	ClientName string        `json:"client_name"`
	Messages   []Message     `json:"messages"`
}

// Message is one arrow (or note) of a diagram.
type Message struct {
	Time time.Time `json:"time"`
	// OffsetMS is the time since the step's first recorded event.
	OffsetMS float64 `json:"offset_ms"`
	From     string  `json:"from"` // ControlPlane, Client or DataPlane
	To       string  `json:"to"`
	Kind     string  `json:"kind"`
	// Label is the human text: type, nonce, versions, resource names (long lists
	// abbreviated), status and backend.
	Label  string `json:"label"`
	Type   string `json:"type,omitempty"`
	Nonce  string `json:"nonce,omitempty"`
	Server int    `json:"server,omitempty"`
	Stream int64  `json:"stream,omitempty"`
	// Resources counts the resources of a send (for the "... K more" summaries).
	Resources int `json:"resources,omitempty"`
	// Removed are the names a send removes: explicitly (delta removed_resources) or, for
	// a SotW LDS/CDS response, by leaving out a name the previous response of that type
	// on the stream had (ByAbsence). Renderers mark such sends.
	Removed   []string `json:"removed,omitempty"`
	ByAbsence bool     `json:"removed_by_absence,omitempty"`
}

// BuildDiagram parses the events of one step into a diagram. Events are ordered by time
// (stable, so equal timestamps keep log order): a restarted control plane writes through
// its own recorder, and time, not file position, is what the reader wants.
func BuildDiagram(r *Run, step string) Diagram {
	var evs []xdslog.Event
	for _, e := range r.Events {
		if e.Step == step {
			evs = append(evs, e)
		}
	}
	return buildDiagram(r, step, clientName(r), evs)
}

// buildDiagram parses evs, the events of one step in log order.
func buildDiagram(r *Run, step, client string, stepEvents []xdslog.Event) Diagram {
	d := Diagram{Step: step, Run: r.Label, Mode: r.Mode, ClientName: client, Messages: []Message{}}
	start, evs := timeOrdered(stepEvents)
	absent := r.replay().absent
	w := windowFold{at: -1}
	for _, e := range evs {
		m := Message{Time: e.TS, OffsetMS: ms(e.TS.Sub(start)), Type: e.Type, Nonce: e.Nonce, Server: e.Server, Stream: e.Stream}
		if e.Event == xdslog.EventDataPlane {
			d.Messages = w.add(d.Messages, m, e, r)
			continue
		}
		if protocolMessage(&m, e, absent) {
			d.Messages = append(d.Messages, m)
		}
	}
	return d
}

// timeOrdered returns the step's first event time (its step event's included) and the
// events other than step events, ordered by time, stably.
func timeOrdered(stepEvents []xdslog.Event) (time.Time, []xdslog.Event) {
	var start time.Time
	evs := make([]xdslog.Event, 0, len(stepEvents))
	for _, e := range stepEvents {
		if start.IsZero() || e.TS.Before(start) {
			start = e.TS
		}
		if e.Event != xdslog.EventStep {
			evs = append(evs, e)
		}
	}
	slices.SortStableFunc(evs, func(a, b xdslog.Event) int { return a.TS.Compare(b.TS) })
	return start, evs
}

// protocolMessage fills in m for a control-plane or client event (absent: the names each
// SotW LDS/CDS send left out), and reports false for an event that is no message.
func protocolMessage(m *Message, e xdslog.Event, absent map[sendKey][]string) bool {
	switch e.Event {
	case xdslog.EventPublish:
		m.From, m.To, m.Kind = ControlPlane, ControlPlane, KindPublish
		m.Label = "publish v" + e.Version + changedText(e.Changed)
	case xdslog.EventSend:
		m.From, m.To, m.Kind = ControlPlane, Client, KindSend
		m.Resources = len(e.Resources)
		m.Removed = e.Removed
		if gone := absent[sendKey{typeKey{streamKey{e.Server, e.Stream}, e.Type}, e.Nonce}]; len(gone) > 0 {
			m.Removed, m.ByAbsence = gone, true
		}
		m.Label = sendLabel(e, m.Removed, m.ByAbsence)
	case xdslog.EventAck:
		m.From, m.To, m.Kind = Client, ControlPlane, KindAck
		m.Label = fmt.Sprintf("ACK %s n=%s v=%s", e.Type, e.Nonce, short(e.SentVersion))
	case xdslog.EventNack:
		m.From, m.To, m.Kind = Client, ControlPlane, KindNack
		m.Label = fmt.Sprintf("NACK %s n=%s v=%s", e.Type, e.Nonce, short(e.SentVersion))
		if a := e.Accepted(); a != "" {
			m.Label += " keeps v=" + short(a)
		}
		if e.Repeat > 1 {
			m.Label += fmt.Sprintf(" repeat %d", e.Repeat)
		}
	case xdslog.EventStorm:
		m.From, m.To, m.Kind = Client, ControlPlane, KindNack
		m.Label = fmt.Sprintf("storm %s: %s, %s n=%s..%s (condensed)", e.Type, count(e.Sends, "re-send"), count(e.Nacks, "NACK"), e.Nonce, e.LastNonce)
	case xdslog.EventUnmatched:
		m.From, m.To, m.Kind = Client, ControlPlane, KindUnmatched
		m.Label = fmt.Sprintf("unmatched %s n=%s", e.Type, e.Nonce)
	case xdslog.EventRequest:
		m.From, m.To, m.Kind = Client, ControlPlane, KindRequest
		if e.Kind == xdslog.RequestOnDemand {
			m.Kind = KindOnDemand
		}
		m.Label = requestLabel(e)
	case xdslog.EventStale:
		m.From, m.To, m.Kind = Client, ControlPlane, KindStale
		m.Label = staleLabel(e)
	case xdslog.EventStreamOpen:
		m.From, m.To, m.Kind = Client, ControlPlane, KindStreamOpen
		m.Label = "open " + streamText(e)
	case xdslog.EventStreamClose:
		m.From, m.To, m.Kind = Client, ControlPlane, KindStreamClose
		m.Label = "close " + streamText(e)
		if e.Dropped != nil && *e.Dropped > 0 {
			m.Label += fmt.Sprintf(" (%d unanswered)", *e.Dropped)
		}
	case xdslog.EventRefused:
		m.From, m.To, m.Kind = ControlPlane, Client, KindRefused
		m.Label = "refused: " + clip(firstLine(e.Error), 80)
	default:
		return false
	}
	return true
}

// windowFold folds window probes (every few ms for a whole step) into one message per
// run of equal answers, so that the protocol messages stay readable.
type windowFold struct {
	at     int // index of the folded message in the messages, -1 when none
	answer string
	count  int
	first  string
}

// add appends a data-plane event's message m to msgs, or folds a window probe into the
// last message when that is the same answer's fold.
func (w *windowFold) add(msgs []Message, m Message, e xdslog.Event, r *Run) []Message {
	m.From, m.To, m.Kind = Client, DataPlane, KindDataPlane
	dp := dataPlaneOf(e)
	if e.Probe == xdslog.ProbeWindow {
		dp.Expected = "" // a window probe has no answer it must get
	}
	answer := dataPlaneText(dp, r)
	if e.Probe != xdslog.ProbeWindow {
		m.Label = "request " + e.RequestID + hostText(e) + ": " + answer
		return append(msgs, m)
	}
	n := analysis.ProbeWeight(e)
	if w.at == len(msgs)-1 && w.at >= 0 && w.answer == answer {
		w.count += n
		msgs[w.at].Label = fmt.Sprintf("window probes x%d from %s: %s", w.count, w.first, answer)
		return msgs
	}
	w.answer, w.count, w.first = answer, n, e.RequestID
	m.Label = fmt.Sprintf("window probes x%d from %s: %s", n, e.RequestID, answer)
	msgs = append(msgs, m)
	w.at = len(msgs) - 1
	return msgs
}

// clientName is the client participant's name: the kind from run.json, else from the
// data-plane events, else plain "client".
func clientName(r *Run) string {
	kind := ""
	if r.Meta != nil {
		kind = r.Meta.Client
	}
	if kind == "" {
		for _, e := range r.Events {
			if e.Event == xdslog.EventDataPlane && e.Client != "" {
				kind = e.Client
				break
			}
		}
	}
	switch kind {
	case "envoy":
		return "Envoy"
	case "grpc":
		return "grpc-go"
	case "simulated":
		return "simulated client"
	}
	return "client"
}

func changedText(changed []string) string {
	if len(changed) == 0 {
		return " (no content change)"
	}
	return " (changed " + strings.Join(changed, ",") + ")"
}

func sendLabel(e xdslog.Event, removed []string, byAbsence bool) string {
	names := make([]string, len(e.Resources))
	red := 0
	for i, r := range e.Resources {
		names[i] = r.Name
		if r.IsRedundant() {
			red++
		}
	}
	s := fmt.Sprintf("send %s n=%s v=%s %s", e.Type, e.Nonce, short(e.Version), nameList(names, "resources"))
	switch {
	case byAbsence:
		s += " removes " + nameList(removed, "names") + " by absence"
	case len(removed) > 0:
		s += " removed " + nameList(removed, "names")
	}
	if red > 0 {
		s += fmt.Sprintf(" (%d redundant)", red)
	}
	var missing []string
	for _, r := range e.Resources {
		if r.NotFound {
			missing = append(missing, r.Name)
		}
	}
	if len(missing) > 0 {
		s += " not found " + nameList(missing, "names")
	}
	return s + fmt.Sprintf(" %dB", e.Bytes)
}

// requestLabel says what a request did to the subscription (its kind), e.g.
// "wildcard CDS", "initial EDS [inventory]", "resume CDS v=4", "subscribe EDS +[b] -[a]",
// "unsubscribe EDS -[inventory]", "re-request RDS n=7".
func requestLabel(e xdslog.Event) string {
	kind := e.Kind
	var s string
	switch kind {
	case xdslog.RequestWildcard:
		s = "wildcard " + e.Type
	case xdslog.RequestInitial:
		s = fmt.Sprintf("initial %s %s", e.Type, nameList(e.Names, "names"))
	case xdslog.RequestResume:
		s = "resume " + e.Type
		if len(e.Names) > 0 {
			s += " " + nameList(e.Names, "names")
		}
		switch {
		case len(e.InitialVersions) > 0:
			s += fmt.Sprintf(" initial_versions=%d", len(e.InitialVersions))
		case e.Version != "":
			s += " v=" + short(e.Version)
		}
		switch {
		case e.HeldUnknown:
			s += " (held unknown)"
		case len(e.Held) > 0:
			s += fmt.Sprintf(" (held %s)", count(len(e.Held), "resource"))
		}
	case xdslog.RequestSubscribe, xdslog.RequestUnsubscribe:
		s = kind + " " + e.Type + changeText(e)
	case xdslog.RequestOnDemand:
		s = "on-demand subscribe " + e.Type + changeText(e)
	case xdslog.RequestRepeat:
		s = "re-request " + e.Type
		if e.Nonce != "" {
			s += " n=" + e.Nonce
		}
	default:
		// A kind this reader does not know: say what the request holds.
		names := "*"
		if len(e.Names) > 0 {
			names = nameList(e.Names, "names")
		}
		s = fmt.Sprintf("request %s %s", e.Type, names)
		if kind != "" {
			s += " (" + kind + ")"
		}
	}
	if len(e.Missing) > 0 {
		s += " missing " + nameList(e.Missing, "names")
	}
	return s
}

// hostText is " (Host h)" for a data-plane request that set a Host, else "".
func hostText(e xdslog.Event) string {
	if e.Host == "" {
		return ""
	}
	return " (Host " + e.Host + ")"
}

// changeText is " +[added] -[removed]" (either part only when present).
func changeText(e xdslog.Event) string {
	var s string
	if len(e.Added) > 0 {
		s += " +" + nameList(e.Added, "names")
	}
	if len(e.Removed) > 0 {
		s += " -" + nameList(e.Removed, "names")
	}
	return s
}

// staleLabel is "stale EDS n=5 (latest n=6) unsubscribe -[inventory]": the request the
// server dropped, and what it would have done.
func staleLabel(e xdslog.Event) string {
	s := fmt.Sprintf("stale %s n=%s", e.Type, orDash(e.Nonce))
	if e.LatestNonce != "" {
		s += " (latest n=" + e.LatestNonce + ")"
	}
	if e.Kind != "" && e.Kind != xdslog.RequestRepeat {
		s += " " + e.Kind + changeText(e)
	}
	if e.Error != "" {
		s += " NACK: " + clip(firstLine(e.Error), 60)
	}
	return s
}

func streamText(e xdslog.Event) string {
	if e.Server > 1 {
		return fmt.Sprintf("stream %d (server %d)", e.Stream, e.Server)
	}
	return fmt.Sprintf("stream %d", e.Stream)
}

// nameList is "[a,b,c]" for short lists and "N <what>" for long ones (a bench send of
// 10,000 clusters must not produce a 10,000-name label).
func nameList(names []string, what string) string {
	switch {
	case len(names) == 0:
		return "[]"
	case len(names) <= 3:
		return "[" + strings.Join(names, ",") + "]"
	}
	return fmt.Sprintf("%d %s", len(names), what)
}

// short abbreviates a 64-hex content hash (a delta resource version) to 8 characters;
// version labels pass through.
func short(v string) string {
	if isHash(v) {
		return v[:8]
	}
	return v
}

func isHash(v string) bool {
	if len(v) != 64 {
		return false
	}
	for _, c := range v {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func firstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// capMessages splits a diagram for rendering: the first max messages, and a note
// summarizing the rest by kind ("" when nothing is hidden).
func capMessages(msgs []Message, max int) ([]Message, string) {
	if len(msgs) <= max {
		return msgs, ""
	}
	rest := msgs[max:]
	counts := map[string]int{}
	for _, m := range rest {
		counts[m.Kind]++
	}
	var parts []string
	for _, k := range []struct{ kind, word string }{
		{KindNack, "nack"}, {KindSend, "send"}, {KindAck, "ack"}, {KindRequest, "request"}, {KindOnDemand, "on-demand subscribe"}, {KindStale, "stale request"},
		{KindUnmatched, "unmatched answer"}, {KindDataPlane, "data-plane request"}, {KindPublish, "publish"},
		{KindStreamOpen, "stream open"}, {KindStreamClose, "stream close"}, {KindRefused, "refusal"},
	} {
		if n := counts[k.kind]; n > 0 {
			parts = append(parts, count(n, k.word))
		}
	}
	return msgs[:max], fmt.Sprintf("... %d more (%s)", len(rest), strings.Join(parts, ", "))
}
