package clientview

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/resources"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// Model is xds.log's account of one client at a checkpoint: what Check compares a view
// with.
type Model struct {
	// Client is whose view it is (ClientEnvoy, ClientGRPC): their versions differ.
	Client string
	// Mode is the stream's protocol (protocol.SotW, protocol.Delta).
	Mode protocol.Mode
	// Stream is the client's ADS stream as xds.log's model has it (xdslog Model.Status):
	// per type and name what it ACKed (version, content hash), per type where it stands
	// with the latest send (SYNCED, STALE, NACKED with the client's error) and its
	// subscription.
	Stream xdslog.StreamStatus
	// Published is the published state for the client's node: type -> name -> content
	// hash. Nil when unknown: then nothing is said about what does not exist.
	Published map[string]map[string]string
	// Labels returns what the client accepted under a SotW version label: name ->
	// content hash (xdslog.LabelBook.Lookup, shared by the run's recorders). Envoy's
	// versions are checked through it; nil: only an identical label agrees.
	Labels func(typ, label string) (map[string]string, bool)
}

// Check compares a client's own view with xds.log's model of it and returns every
// disagreement, in type order (CDS, EDS, LDS, RDS) then by name. LDS, RDS, CDS and EDS
// are compared; VHDS is not (Envoy's config dump has virtual hosts inside their route
// configuration, and grpc-go does not speak it). For each type and each name that the
// model holds or the view lists (and, for grpc-go, each name the model has it
// subscribed to), what must agree is:
//
//  1. Held. A resource the model says the client ACKed is in the view, ACKED (Envoy:
//     active or warming), or NACKED when the model has the type NACKED (the client
//     keeps it), with the same content and version (rule 2). The only exception is a
//     removal in flight: the type's latest send is STALE and the published state no
//     longer has the name (the client applied the removal and its ACK has not been
//     recorded yet).
//  2. Content and version. When the view carries the resource (grpc-go's CSDS
//     xds_config: the bytes as received; Envoy's dump, re-encoded), its content hash
//     must be the one the model says the client holds. The model's version of a
//     resource is the version_info (SotW) of the response that carried it as last
//     ACKed, or its delta resource version (the content hash with every cache here).
//     In SotW the recorder writes that label whatever --sotw-versions says: under
//     uniform every change re-sends every type under one new label, under per-type (and
//     with the linear and indexed caches, which send RDS and EDS resources only when
//     they change) a type's label moves alone. What the client reports:
//     - grpc-go (SotW only) reports the same thing: its version must equal the model's
//     (authority.handleADSResourceUpdate sets it from every valid response carrying
//     the resource, changed or not).
//     - Envoy SotW reports the label of the response that last changed the resource's
//     content: it skips an update whose content hash it already runs
//     (ClusterManagerImpl::addOrUpdateCluster, ListenerManagerImpl::addOrUpdateListener,
//     RouteConfigUpdateReceiverImpl::onRdsUpdate), so after a uniform change to one
//     cluster the others still say the older label, and after a control-plane restart
//     the model's version is the label the client resumed with. So Envoy's label agrees
//     when it is the model's, or when the client accepted, under that label, the content
//     the model says it holds now (Labels; a label the book no longer knows does not
//     agree, and the finding says so).
//     - Envoy delta reports the resource version, which must equal the model's.
//     - A listener Envoy updated in place (only its filter chains changed) keeps the
//     version_info of the listener it replaced (ListenerImpl::newListenerWithFilterChain
//     passes version_info_ on): its version agrees when the content is the model's and
//     the label is one under which the client accepted that listener (SotW; in delta
//     the version is then an earlier content hash, which the content check covers).
//     - PresenceOnly rows (Envoy's endpoint assignments, and route configurations with
//     VHDS, which Envoy dumps merged with their virtual hosts under the VHDS update's
//     version) agree by being there.
//     In every case a row also agrees when it is in flight: the type's latest send is
//     STALE (sent, not answered), the name is published, and the row is what that send
//     carries (SotW: its version_info and the published content; delta: the published
//     content hash). The client applied it and its ACK has not been recorded yet, or it
//     holds the ACK on purpose (Envoy answers a CDS response only once its clusters have
//     warmed).
//  3. Extra. A resource the view has ACKED that the model says the client does not
//     hold is a finding, unless it is in flight as above.
//  4. NACK. A resource NACKED in the view needs the model's type NACKED (or a send of
//     the rejected version still STALE: the NACK in flight), the client's error
//     contained in the error_detail the model recorded (grpc-go's error_state is the
//     resource's own part of it; Envoy's a listener's part, both without the debug
//     marker and with whitespace runs as one space), in SotW the rejected version, when
//     the client gives one, equal to the NACKed send's, and what it keeps as in rule 2.
//     Conversely a type the model has NACKED needs a NACKED resource of that type in a
//     grpc-go view. Envoy 1.40 has an error_state for listeners only (a rejected route
//     configuration, cluster or assignment leaves the old one as it was, ACKED), so for
//     Envoy the type-level rule is not applied.
//  5. Does not exist. A name the model has the client subscribed to and does not hold is
//     REQUESTED or DOES_NOT_EXIST in a grpc-go view (grpc-go keeps a state for every
//     name it watches); DOES_NOT_EXIST needs the published state not to have it, and
//     neither status may be for a name the model says the client holds or never
//     subscribed to. Envoy reports neither status: such a name is absent from its view.
//  6. UNKNOWN rows (Envoy's assignments it shows without endpoints or does not dump
//     while their cluster warms) are not compared.
//  7. Partial accept (grpc-go, SotW; a client behaviour, not the protocol: the xDS spec
//     has a NACK reject the response, and xds.log's model keeps the type at what it
//     last ACKed). grpc-go applies the valid resources of a response it NACKs and
//     reports them ACKED under the rejected version_info
//     (internal/xds/clients/xdsclient/authority.go, authority.handleADSResourceUpdate:
//     "The metadata might be a NACK metadata because some other resources in the same
//     response are invalid", then state.md.Version = md.ErrState.Version). So for
//     grpc-go an ACKED row of a type the model has NACKED agrees, held or not, when
//     (and only when) its version is the NACKed send's and its content hash (the view
//     must carry the resource) is what that send carried for the name
//     (TypeStatus.Rejected).
func Check(m Model, view []Resource) []Finding {
	c := newChecker(m)
	var out []Finding
	rows := map[string]map[string]*Resource{}
	for i := range view {
		r := &view[i]
		if !c.compared(r.Type) {
			continue
		}
		if rows[r.Type] == nil {
			rows[r.Type] = map[string]*Resource{}
		}
		if _, dup := rows[r.Type][r.Name]; dup {
			out = append(out, Finding{Type: r.Type, Name: r.Name, Model: "one resource", Client: "it twice"})
			continue
		}
		rows[r.Type][r.Name] = r
	}
	for _, t := range resources.Types {
		typ := string(t)
		if !c.compared(typ) {
			continue
		}
		for _, name := range c.names(typ, rows[typ]) {
			if f, ok := c.one(typ, name, rows[typ][name]); !ok {
				out = append(out, f)
			}
		}
		if f, ok := c.typeNack(typ, rows[typ]); !ok {
			out = append(out, f)
		}
	}
	return out
}

// checker holds a Check's inputs and its memo of label lookups (a lookup copies the
// label's content; a view of 10,000 resources would copy it 10,000 times).
type checker struct {
	m      Model
	labels map[[2]string]map[string]string
}

func newChecker(m Model) *checker {
	return &checker{m: m, labels: map[[2]string]map[string]string{}}
}

func (c *checker) compared(typ string) bool {
	return slices.Contains(resources.CoreTypes, resources.Type(typ))
}

// names are the names Check looks at for typ, sorted: held, listed, and for grpc-go
// subscribed.
func (c *checker) names(typ string, rows map[string]*Resource) []string {
	set := map[string]bool{}
	for n := range c.m.Stream.Accepted[typ] {
		set[n] = true
	}
	for n := range rows {
		set[n] = true
	}
	if c.m.Client == ClientGRPC {
		for _, n := range c.m.Stream.Types[typ].Names {
			if n != "*" {
				set[n] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// one checks one name; ok is false with the finding when they disagree.
func (c *checker) one(typ, name string, row *Resource) (Finding, bool) {
	f := Finding{Type: typ, Name: name}
	a, held := c.m.Stream.Accepted[typ][name]
	ts := c.m.Stream.Types[typ]
	if row == nil {
		switch {
		case held && !c.removalInFlight(typ, name):
			f.Model, f.Client = "ACKed "+describeAccepted(a), "nothing (absent)"
			return f, false
		case !held && c.m.Client == ClientGRPC && c.subscribed(typ, name):
			f.Model, f.Client = "subscribed and not held", "no state for it (grpc-go keeps one for every name it watches)"
			return f, false
		}
		return f, true
	}
	switch row.Status {
	case StatusACKED:
		return c.acked(f, a, held, row)
	case StatusNACKED:
		return c.nacked(f, a, held, ts, row)
	case StatusRequested, StatusDoesNotExist:
		return c.absent(f, held, row)
	}
	return f, true // UNKNOWN: not compared
}

// acked checks an ACKED row (Envoy: active or warming).
func (c *checker) acked(f Finding, a xdslog.Accepted, held bool, row *Resource) (Finding, bool) {
	f.Client = describeRow(row)
	if held {
		ok, why := c.agrees(f.Type, f.Name, row, a)
		if ok || c.inFlight(f.Type, f.Name, row) || c.partialAccept(f.Type, f.Name, row) {
			return f, true
		}
		f.Model = "ACKed " + describeAccepted(a) + why
		return f, false
	}
	if c.inFlight(f.Type, f.Name, row) || c.partialAccept(f.Type, f.Name, row) {
		return f, true
	}
	f.Model = "the client holds nothing" + c.whyNotHeld(f.Type, f.Name)
	return f, false
}

// nacked checks a NACKED row: the model's type is NACKED with an error containing the
// client's, the rejected version is the NACKed send's, and what the client keeps is what
// the model says it holds.
func (c *checker) nacked(f Finding, a xdslog.Accepted, held bool, ts xdslog.TypeStatus, row *Resource) (Finding, bool) {
	f.Client = describeRow(row)
	if ts.State != xdslog.TypeNacked {
		if ts.State == xdslog.TypeStale && row.RejectedVersion != "" && row.RejectedVersion == ts.SentVersion {
			return f, true // the NACK is in flight
		}
		f.Model = "the type is " + describeType(ts)
		return f, false
	}
	switch {
	case row.Error == "" || !errorContains(ts.Error, row.Error):
		f.Model = fmt.Sprintf("NACKed with %q", clip(ts.Error, 300))
		return f, false
	case c.m.Mode == protocol.SotW && row.RejectedVersion != "" && row.RejectedVersion != ts.SentVersion:
		f.Model = fmt.Sprintf("NACKed version %s", ts.SentVersion)
		return f, false
	case held:
		if ok, why := c.agrees(f.Type, f.Name, row, a); !ok {
			f.Model = "the client keeps " + describeAccepted(a) + why
			return f, false
		}
	case row.Version != "":
		f.Model = "the client holds nothing" + c.whyNotHeld(f.Type, f.Name)
		return f, false
	}
	return f, true
}

// absent checks a REQUESTED or DOES_NOT_EXIST row.
func (c *checker) absent(f Finding, held bool, row *Resource) (Finding, bool) {
	f.Client = describeRow(row)
	switch {
	case held:
		if row.Status == StatusDoesNotExist && c.removalInFlight(f.Type, f.Name) {
			return f, true
		}
		f.Model = "ACKed " + describeAccepted(c.m.Stream.Accepted[f.Type][f.Name])
		return f, false
	case !c.subscribed(f.Type, f.Name):
		f.Model = "the client is not subscribed to it"
		return f, false
	case row.Status == StatusDoesNotExist:
		if hash, pub := c.published(f.Type, f.Name); pub {
			f.Model = "it is published (" + short(hash) + ") and not held"
			return f, false
		}
	}
	return f, true
}

// typeNack: a type the model has NACKED has a NACKED resource in a grpc-go view.
func (c *checker) typeNack(typ string, rows map[string]*Resource) (Finding, bool) {
	ts := c.m.Stream.Types[typ]
	if ts.State != xdslog.TypeNacked || c.m.Client != ClientGRPC {
		return Finding{}, true
	}
	for _, r := range rows {
		if r.Status == StatusNACKED {
			return Finding{}, true
		}
	}
	return Finding{Type: typ, Model: fmt.Sprintf("NACKed version %s with %q", ts.SentVersion, clip(ts.Error, 300)),
		Client: "no NACKED " + typ + " resource"}, false
}

// agrees applies the content and version rules (Check, rule 2) to a row of a resource
// the model says the client holds; why says what differs when they disagree.
func (c *checker) agrees(typ, name string, row *Resource, a xdslog.Accepted) (bool, string) {
	switch {
	case row.PresenceOnly:
		return true, ""
	case row.Hash != "" && row.Hash != a.Hash:
		return false, fmt.Sprintf(" (the client's copy is content %s)", short(row.Hash))
	case row.Version == a.Version:
		return true, ""
	case c.m.Client != ClientEnvoy:
		return false, ""
	}
	inPlace := typ == string(resources.LDS) && row.Hash != "" // the content check passed
	if c.m.Mode == protocol.Delta {
		// An in-place update keeps the version (then the content hash) of the listener it
		// updated; the content, checked above, is the model's.
		return inPlace, ""
	}
	content, ok := c.label(typ, row.Version)
	switch {
	case !ok:
		return false, fmt.Sprintf(" (label %q is not in the label book: never ACKed, or forgotten)", row.Version)
	case content[name] == a.Hash:
		return true, ""
	case content[name] != "" && inPlace:
		return true, "" // ListenerImpl::newListenerWithFilterChain keeps the version_info
	case content[name] == "":
		return false, fmt.Sprintf(" (the client accepted no %s under label %q)", name, row.Version)
	}
	return false, fmt.Sprintf(" (label %q carried content %s)", row.Version, short(content[name]))
}

func (c *checker) label(typ, label string) (map[string]string, bool) {
	k := [2]string{typ, label}
	if got, ok := c.labels[k]; ok {
		return got, got != nil
	}
	var content map[string]string
	if c.m.Labels != nil {
		content, _ = c.m.Labels(typ, label)
	}
	c.labels[k] = content
	return content, content != nil
}

// inFlight: the type's latest send is unanswered and the row is what it carries for
// name: SotW, its version_info (and, when the view has content, the published content);
// delta, the published content hash as version or content; a presence-only row, any
// send of a published name.
func (c *checker) inFlight(typ, name string, row *Resource) bool {
	ts := c.m.Stream.Types[typ]
	if ts.State != xdslog.TypeStale {
		return false
	}
	hash, pub := c.published(typ, name)
	switch {
	case !pub:
		return false
	case row.PresenceOnly:
		return true
	case c.m.Mode == protocol.Delta:
		return row.Version == hash || row.Hash == hash
	}
	return row.Version == ts.SentVersion && (row.Hash == "" || row.Hash == hash)
}

// partialAccept: grpc-go took this valid resource from the SotW response it NACKed
// (Check, rule 7): the row is ACKED under the rejected version with the content that
// response carried for the name.
func (c *checker) partialAccept(typ, name string, row *Resource) bool {
	ts := c.m.Stream.Types[typ]
	if c.m.Client != ClientGRPC || c.m.Mode != protocol.SotW || ts.State != xdslog.TypeNacked {
		return false
	}
	sent, ok := ts.Rejected[name]
	return ok && row.Hash != "" && row.Hash == sent && row.Version == ts.SentVersion
}

// removalInFlight: the latest send is unanswered and the published state no longer has
// the name: the client may have applied the removal before its ACK was recorded.
func (c *checker) removalInFlight(typ, name string) bool {
	if c.m.Stream.Types[typ].State != xdslog.TypeStale || c.m.Published == nil {
		return false
	}
	_, pub := c.published(typ, name)
	return !pub
}

func (c *checker) published(typ, name string) (string, bool) {
	h, ok := c.m.Published[typ][name]
	return h, ok
}

func (c *checker) subscribed(typ, name string) bool {
	ts := c.m.Stream.Types[typ]
	return ts.Wildcard || slices.Contains(ts.Names, name)
}

// whyNotHeld says what the model knows of a name the client does not hold.
func (c *checker) whyNotHeld(typ, name string) string {
	parts := []string{}
	if _, pub := c.published(typ, name); !pub && c.m.Published != nil {
		parts = append(parts, "not published")
	}
	if !c.subscribed(typ, name) {
		parts = append(parts, "not subscribed")
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
