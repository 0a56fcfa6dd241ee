package compare

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xds-workbench/lab/experiments/analysis"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
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
		m.Label = fmt.Sprintf("ACK %s n=%s v=%s", e.Type, e.Nonce, words.Short(e.SentVersion))
	case xdslog.EventNack:
		m.From, m.To, m.Kind = Client, ControlPlane, KindNack
		m.Label = fmt.Sprintf("NACK %s n=%s v=%s", e.Type, e.Nonce, words.Short(e.SentVersion))
		if a := e.Accepted(); a != "" {
			m.Label += " keeps v=" + words.Short(a)
		}
		if e.Repeat > 1 {
			m.Label += fmt.Sprintf(" repeat %d", e.Repeat)
		}
	case xdslog.EventStorm:
		m.From, m.To, m.Kind = Client, ControlPlane, KindNack
		m.Label = fmt.Sprintf("storm %s: %s, %s n=%s..%s (condensed)", e.Type, words.Count(e.Sends, "re-send"), words.Count(e.Nacks, "NACK"), e.Nonce, e.LastNonce)
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
		m.Label = "refused: " + words.Clip(firstLine(e.Error), 80)
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
	s := fmt.Sprintf("send %s n=%s v=%s %s", e.Type, e.Nonce, words.Short(e.Version), words.NameList(names, "resources"))
	switch {
	case byAbsence:
		s += " removes " + words.NameList(removed, "names") + " by absence"
	case len(removed) > 0:
		s += " removed " + words.NameList(removed, "names")
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
		s += " not found " + words.NameList(missing, "names")
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
		s = fmt.Sprintf("initial %s %s", e.Type, words.NameList(e.Names, "names"))
	case xdslog.RequestResume:
		s = "resume " + e.Type
		if len(e.Names) > 0 {
			s += " " + words.NameList(e.Names, "names")
		}
		switch {
		case len(e.InitialVersions) > 0:
			s += fmt.Sprintf(" initial_versions=%d", len(e.InitialVersions))
		case e.Version != "":
			s += " v=" + words.Short(e.Version)
		}
		switch {
		case e.HeldUnknown:
			s += " (held unknown)"
		case len(e.Held) > 0:
			s += fmt.Sprintf(" (held %s)", words.Count(len(e.Held), "resource"))
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
			names = words.NameList(e.Names, "names")
		}
		s = fmt.Sprintf("request %s %s", e.Type, names)
		if kind != "" {
			s += " (" + kind + ")"
		}
	}
	if len(e.Missing) > 0 {
		s += " missing " + words.NameList(e.Missing, "names")
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
		s += " +" + words.NameList(e.Added, "names")
	}
	if len(e.Removed) > 0 {
		s += " -" + words.NameList(e.Removed, "names")
	}
	return s
}

// staleLabel is "stale EDS n=5 (latest n=6) unsubscribe -[inventory]": the request the
// server dropped, and what it would have done.
func staleLabel(e xdslog.Event) string {
	s := fmt.Sprintf("stale %s n=%s", e.Type, words.OrDash(e.Nonce))
	if e.LatestNonce != "" {
		s += " (latest n=" + e.LatestNonce + ")"
	}
	if e.Kind != "" && e.Kind != xdslog.RequestRepeat {
		s += " " + e.Kind + changeText(e)
	}
	if e.Error != "" {
		s += " NACK: " + words.Clip(firstLine(e.Error), 60)
	}
	return s
}

func streamText(e xdslog.Event) string {
	if e.Server > 1 {
		return fmt.Sprintf("stream %d (server %d)", e.Stream, e.Server)
	}
	return fmt.Sprintf("stream %d", e.Stream)
}

func firstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
