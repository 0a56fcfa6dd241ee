// Package words holds the few words and figures every section of a comparison writes
// alike, whether experiments/compare computes it (a finding's text) or
// experiments/compare/render shows it (a table cell): counts with their noun, ratios of
// two totals, byte sizes, lists, abbreviated hashes, and the unnamed step's name. Each
// has one helper, so a report never says "1 responses" in one place and "1 response" in
// another, nor a ratio as 0.00 here and 1/2554 there. Only the two compare packages use
// it.
package words

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Count is "1 resource" or "3 resources": every count printed with its noun goes
// through it.
func Count(n int, word string) string {
	switch {
	case n == 1:
		return "1 " + word
	case strings.HasSuffix(word, "sh"):
		return fmt.Sprintf("%d %ses", n, word) // publishes
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// Ratio is a over b as a reader can weigh it: "30.87" when a is larger, "1/2554"
// when a is smaller (a plain quotient would print 1,729 bytes over 4,415,311 as 0.00),
// "1" when equal, "0" when a is 0 and "∞" when only b is. A quotient has at most two
// decimals, none from 100 up (they say nothing at that size), and no trailing zeros.
func Ratio(a, b int) string {
	switch {
	case a == b:
		return "1"
	case a == 0:
		return "0"
	case b == 0:
		return "∞"
	case a < b:
		return "1/" + quotient(float64(b)/float64(a))
	}
	return quotient(float64(a) / float64(b))
}

func quotient(q float64) string {
	if q >= 100 {
		return strconv.FormatFloat(math.Round(q), 'f', -1, 64)
	}
	return strconv.FormatFloat(math.Round(q*100)/100, 'f', -1, 64)
}

// Sanitize drops control characters (a log line can carry anything in an error string)
// so one value stays on one line of the output.
func Sanitize(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return ' '
		}
		return r
	}, s)
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// OrDash is s, or "-" when it is empty.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Steps shows each step as Step does.
func Steps(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = Step(x)
	}
	return out
}

// SortedKeys are m's keys in order.
func SortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Clip shortens s to n runes with "...".
func Clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "..."
}

// ListOrNone joins s with commas, "none" when it is empty.
func ListOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// NoStep is how every format shows the unnamed step: the events recorded before the
// first step was set (a lab serve log's first pushes). compare.Options.Step accepts it.
const NoStep = "(no step)"

// Step shows the unnamed step as NoStep.
func Step(s string) string {
	if s == "" {
		return NoStep
	}
	return s
}

// AndList is "a", "a and b", "a, b and c".
func AndList(v []string) string {
	if len(v) < 2 {
		return strings.Join(v, "")
	}
	return strings.Join(v[:len(v)-1], ", ") + " and " + v[len(v)-1]
}

// AppendNew appends v to s unless s holds it.
func AppendNew(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// NameList is "[a,b,c]" for short lists and "N <what>" for long ones (a bench send of
// 10,000 clusters must not produce a 10,000-name label).
func NameList(names []string, what string) string {
	switch {
	case len(names) == 0:
		return "[]"
	case len(names) <= 3:
		return "[" + strings.Join(names, ",") + "]"
	}
	return fmt.Sprintf("%d %s", len(names), what)
}

// Short abbreviates a 64-hex content hash (a delta resource version) to 8 characters;
// version labels pass through.
func Short(v string) string {
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

// Bytes is 1234567 as "1.2 MB", 2345 as "2.3 kB", 512 as "512 B".
func Bytes(b float64) string {
	switch {
	case b >= 1e6:
		return fmt.Sprintf("%.1f MB", b/1e6)
	case b >= 1e3:
		return fmt.Sprintf("%.1f kB", b/1e3)
	}
	return fmt.Sprintf("%.0f B", b)
}

// Int is 1001 as "1,001".
func Int(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
