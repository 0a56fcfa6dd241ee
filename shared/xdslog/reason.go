package xdslog

import "strings"

// debugMarker starts the marker protobuf puts on debug-only text ("goo.gle/debugonly",
// or "goo.gle/debugproto": the word varies between builds and runs). Envoy embeds the
// rejected resource with it in error_detail. It means "do not parse this" and says
// nothing about the rejection, so the recorder drops it from the stored error.
const debugMarker = "goo.gle/debug"

// CleanError removes Envoy's debug-only marker from a NACK's error_detail; the rest is
// kept verbatim as the evidence.
func CleanError(s string) string {
	t := strings.TrimLeft(s, " \t\n")
	if !strings.HasPrefix(t, debugMarker) {
		return s
	}
	if i := strings.IndexAny(t, " \t\n"); i >= 0 {
		return strings.TrimLeft(t[i:], " \t\n")
	}
	return ""
}

// maxReason bounds a reason on one console line.
const maxReason = 160

// NackReason shortens a NACK's error to its reason for one line: Envoy's message embeds
// the rejected resource in text form, then ": " and the validation message, whose last
// "caused by" clause is the reason. The closing parenthesis of the validation message
// is dropped with its opening one.
func NackReason(s string) string {
	s = CleanError(s)
	if i := strings.LastIndex(s, "caused by "); i >= 0 {
		s = s[i+len("caused by "):]
	} else if i := strings.LastIndex(s, "\n: "); i >= 0 {
		s = s[i+len("\n: "):] // the message after the embedded resource
	} else if i := strings.LastIndexByte(strings.TrimSpace(s), '\n'); i >= 0 {
		s = s[i+1:]
	}
	s = strings.TrimSpace(s)
	// Drop closing parentheses whose opening one was cut off with the clauses before.
	for strings.HasSuffix(s, ")") && strings.Count(s, ")") > strings.Count(s, "(") {
		s = strings.TrimSpace(strings.TrimSuffix(s, ")"))
	}
	if r := []rune(s); len(r) > maxReason {
		s = string(r[:maxReason]) + "..."
	}
	return s
}
