package clientview

import (
	"fmt"
	"strings"

	"github.com/xds-workbench/lab/shared/xdslog"
)

// describeAccepted is what the model says the client holds: "version 3 (content
// 1a2b3c4d)"; delta versions are the hash, shown once.
func describeAccepted(a xdslog.Accepted) string {
	if a.Version == a.Hash || a.Hash == "" {
		return "version " + orNoneWord(short(a.Version))
	}
	return fmt.Sprintf("version %s (content %s)", orNoneWord(a.Version), short(a.Hash))
}

// describeRow is what the client says of a resource: "ACKED version 3 (warming)",
// "NACKED keeping version 2: <error>".
func describeRow(r *Resource) string {
	var b strings.Builder
	b.WriteString(r.Status)
	switch {
	case r.Status == StatusNACKED && r.Version != "":
		fmt.Fprintf(&b, " keeping version %s", short(r.Version))
	case r.Version != "":
		fmt.Fprintf(&b, " version %s", short(r.Version))
	}
	if r.Warming {
		b.WriteString(" (warming)")
	}
	if r.RejectedVersion != "" {
		fmt.Fprintf(&b, ", rejected version %s", short(r.RejectedVersion))
	}
	if r.Error != "" {
		fmt.Fprintf(&b, ": %q", clip(r.Error, 300))
	}
	return b.String()
}

// describeType is where the model has a type with its latest send.
func describeType(ts xdslog.TypeStatus) string {
	switch ts.State {
	case "":
		return "never sent"
	case xdslog.TypeStale:
		return fmt.Sprintf("STALE (version %s sent, not answered)", ts.SentVersion)
	case xdslog.TypeSynced:
		return fmt.Sprintf("SYNCED at version %s", ts.Version)
	}
	return ts.State
}

// errorContains: the client's error is part of the error_detail the model recorded. The
// recorder drops Envoy's debug marker (xdslog.CleanError), so the client's is cleaned the
// same way, and whitespace runs count as one space: protobuf's debug text, which Envoy
// embeds in both, varies its spacing from one rendering to the next. grpc-go's
// per-resource detail is a part of its NACK's combined message.
func errorContains(model, client string) bool {
	c := strings.Join(strings.Fields(xdslog.CleanError(client)), " ")
	return c != "" && strings.Contains(strings.Join(strings.Fields(model), " "), c)
}

// short keeps 64-hex content hashes readable: their first 8 characters.
func short(s string) string {
	if len(s) == 64 && strings.Trim(s, "0123456789abcdef") == "" {
		return s[:8]
	}
	return s
}

func orNoneWord(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// clip shortens s to n bytes with "...", on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
