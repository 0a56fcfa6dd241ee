package serve

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/xds-workbench/lab/experiments/table"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// serveStatus is `status --json`: what is published and, per open stream, what the model
// of the log says (xdslog.StreamStatus: node, peer, per type its state, per resource
// what the client runs). Notes are the plain-language findings the text status prints
// too (no stream for the published node, a stream whose node has no state).
type serveStatus struct {
	Version      string                `json:"version"`
	TypeVersions map[string]string     `json:"type_versions"`
	Node         string                `json:"node"`
	Mode         protocol.Mode         `json:"mode"`
	Cache        string                `json:"cache"`
	Streams      []xdslog.StreamStatus `json:"streams"`
	Notes        []string              `json:"notes,omitempty"`
}

func (sv *serveLoop) status() serveStatus {
	st := serveStatus{Version: sv.cur.Version, TypeVersions: map[string]string{}, Node: serveNodeID(sv.o.NodeID),
		Mode: sv.o.Mode, Cache: string(sv.o.Cache), Streams: sv.acc.Status()}
	for t, v := range sv.cp.Publisher().Versions() {
		st.TypeVersions[string(t)] = v
	}
	served := false
	for _, s := range st.Streams {
		switch {
		case s.Node == "":
		case serveHasState(sv.o.Cache, st.Node, s.Node):
			served = true
		default:
			st.Notes = append(st.Notes, fmt.Sprintf("stream %d has node ID %s, which has no state: this server publishes to node %s only", s.Stream, s.Node, st.Node))
		}
	}
	if !served {
		how := "start Envoy with the bootstrap lab bootstrap --mode " + sv.o.Mode + " prints"
		if len(st.Streams) > 0 {
			how = "check the node.id in Envoy's bootstrap, or serve with that --node-id"
		}
		st.Notes = append(st.Notes, fmt.Sprintf("no stream for node %s, the node this server publishes to: nothing receives version %s (%s)", st.Node, st.Version, how))
	}
	return st
}

func (sv *serveLoop) printStatusJSON() {
	b, err := json.Marshal(sv.status())
	if err != nil {
		fmt.Fprintf(sv.out, "error: encode status: %v\n", err)
		return
	}
	fmt.Fprintln(sv.out, string(b))
}

// printStatus is proxy-status for the streams of this server: per stream who it is, per
// type whether the latest send is ACKed (SYNCED), unanswered (STALE), rejected (NACKED)
// or never sent, and per resource what the client runs.
func (sv *serveLoop) printStatus() {
	st := sv.status()
	head := fmt.Sprintf("version %s published to node %s", st.Version, st.Node)
	// SotW per-type versions can lag the label; show them when they do.
	var parts []string
	lag := false
	for _, t := range resources.Types {
		tv := st.TypeVersions[string(t)]
		lag = lag || tv != st.Version
		parts = append(parts, string(t)+" "+tv)
	}
	if lag {
		head += " (type versions: " + strings.Join(parts, ", ") + ")"
	}
	switch len(st.Streams) {
	case 0:
		fmt.Fprintf(sv.out, "%s; no stream connected\n", head)
	case 1:
		fmt.Fprintf(sv.out, "%s; 1 stream connected\n", head)
	default:
		fmt.Fprintf(sv.out, "%s; %d streams connected\n", head, len(st.Streams))
	}
	now := time.Now()
	for _, s := range st.Streams {
		fmt.Fprintf(sv.out, "stream %d: node %s, peer %s, %s ADS, %s cache, connected since %s (%s)\n",
			s.Stream, serveOrDash(s.Node), serveOrDash(s.Peer), st.Mode, st.Cache, s.Opened.Local().Format("15:04:05"), serveAgo(now, s.Opened))
		sv.printTypes(now, s)
		sv.printResources(s)
	}
	for _, n := range st.Notes {
		fmt.Fprintln(sv.out, n)
	}
}

// printTypes lists, per type the stream asked for or was sent, where it stands.
func (sv *serveLoop) printTypes(now time.Time, s xdslog.StreamStatus) {
	types := slices.Sorted(maps.Keys(s.Types))
	if len(types) == 0 {
		fmt.Fprintln(sv.out, "  (nothing requested yet)")
		return
	}
	t := table.Table{Head: []string{"TYPE", "STATE", "RUNS", "DETAIL"}}
	for _, typ := range types {
		ts := s.Types[typ]
		t.Rows = append(t.Rows, table.Cells(typ, ts.State, serveOrDash(ts.Version), serveTypeDetail(now, ts)))
	}
	_, _ = io.WriteString(sv.out, t.Text(0))
}

// serveTypeDetail says why a type is not SYNCED ("" when there is nothing to say).
func serveTypeDetail(now time.Time, ts xdslog.TypeStatus) string {
	switch ts.State {
	case xdslog.TypeStale:
		return fmt.Sprintf("version %s sent as nonce %s %s ago, not answered", ts.SentVersion, ts.Nonce, serveAgo(now, *ts.Since))
	case xdslog.TypeNacked:
		return fmt.Sprintf("version %s rejected: %s", ts.SentVersion, xdslog.NackReason(ts.Error))
	case xdslog.TypeNotSent:
		return "asked for, nothing sent"
	}
	return ""
}

// printResources lists what the client runs. A delta resource's version is its content
// hash, so the version column appears only when some version differs from its hash.
func (sv *serveLoop) printResources(s xdslog.StreamStatus) {
	withVersion := false
	n := 0
	for _, byName := range s.Accepted {
		for _, a := range byName {
			n++
			withVersion = withVersion || a.Version != a.Hash
		}
	}
	if n == 0 {
		return
	}
	t := table.Table{Head: []string{"RESOURCE", "HASH"}}
	if withVersion {
		t.Head = []string{"RESOURCE", "VERSION", "HASH"}
	}
	for _, typ := range slices.Sorted(maps.Keys(s.Accepted)) {
		for _, name := range slices.Sorted(maps.Keys(s.Accepted[typ])) {
			a := s.Accepted[typ][name]
			if withVersion {
				t.Rows = append(t.Rows, table.Cells(typ+" "+name, serveOrDash(a.Version), serveShort(a.Hash)))
			} else {
				t.Rows = append(t.Rows, table.Cells(typ+" "+name, serveShort(a.Hash)))
			}
		}
	}
	_, _ = io.WriteString(sv.out, t.Text(0))
}

// serveAgo is how long ago t was, rounded for a console.
func serveAgo(now, t time.Time) string {
	d := now.Sub(t)
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
