package cite

import (
	"fmt"
	"regexp"
	"strings"
)

// Problem is one bad protocol citation in a text: the line it starts on (1-based), the
// citation as written, and what is wrong with it.
type Problem struct {
	Line int
	Text string
	Err  string
}

func (p Problem) String() string { return fmt.Sprintf("%d: %s: %s", p.Line, p.Err, p.Text) }

// A citation is `xDS protocol, "Title"`, and more titles may follow: `, "B"` or
// ` and "C"`. The other forms the docs once used (`xDS protocol: Title`, `xDS
// protocol's "Title"`, `xDS protocol: "Title"`) are refused, so that one form can be
// checked; prose that names the protocol without citing ("the xDS protocol document
// says") is not a citation. Markdown wraps lines anywhere, so the text is read with its
// white space folded.
var (
	citeStart    = regexp.MustCompile(`(?i)(?:xDS|gRPC) protocol(?:'s)?\s*([,:])?\s*`)
	quotedTitle  = regexp.MustCompile(`^"([^"]*)"`)
	moreTitles   = regexp.MustCompile(`^(?:,\s*|,?\s+and\s+)"([^"]*)"`)
	upperStarter = regexp.MustCompile(`^[A-Z"]`)
)

// CheckText finds every protocol citation in text and returns what is wrong with each:
// a form other than `xDS protocol, "Title"`, or a title not in Sections.
func CheckText(text string) []Problem {
	flat, lineAt := fold(text)
	var out []Problem
	for _, m := range citeStart.FindAllStringSubmatchIndex(flat, -1) {
		start, end := m[0], m[1]
		sep := ""
		if m[2] >= 0 {
			sep = flat[m[2]:m[3]]
		}
		rest := flat[end:]
		possessive := strings.HasSuffix(strings.ToLower(strings.TrimSpace(flat[start:end])), "'s")
		bad := func(err string) {
			out = append(out, Problem{Line: lineAt(start), Text: excerpt(flat[start:], 70), Err: err})
		}
		switch {
		case sep == "," && !possessive && quotedTitle.MatchString(rest):
			for _, t := range titlesAt(rest) {
				if !IsSection(t) {
					bad(fmt.Sprintf("%q is not a section title of xds_protocol.rst (see experiments/cite/xds_protocol_sections.txt)", t))
				}
			}
		case (sep != "" || possessive) && upperStarter.MatchString(rest):
			bad(`write a protocol citation as xDS protocol, "<section title>"`)
		}
	}
	return out
}

// titlesAt are the quoted titles at the start of s: the first and each `, "X"` or
// ` and "X"` after it.
func titlesAt(s string) []string {
	m := quotedTitle.FindStringSubmatch(s)
	titles := []string{m[1]}
	s = s[len(m[0]):]
	for {
		m := moreTitles.FindStringSubmatch(s)
		if m == nil {
			return titles
		}
		titles = append(titles, m[1])
		s = s[len(m[0]):]
	}
}

// fold turns every run of white space into one space and typographic quotes into plain
// ones, and returns a function from an offset in the folded text to its line in text.
func fold(text string) (string, func(int) int) {
	text = strings.NewReplacer("“", `"`, "”", `"`).Replace(text)
	var b strings.Builder
	var lines []int // line of each byte written
	line, space := 1, false
	for _, r := range text {
		if r == '\n' || r == ' ' || r == '\t' || r == '\r' {
			if !space {
				b.WriteByte(' ')
				lines = append(lines, line)
			}
			space = true
			if r == '\n' {
				line++
			}
			continue
		}
		space = false
		n, _ := b.WriteRune(r)
		for range n {
			lines = append(lines, line)
		}
	}
	return b.String(), func(off int) int {
		if off < len(lines) {
			return lines[off]
		}
		return line
	}
}

func excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 { // not inside a UTF-8 sequence
		cut--
	}
	return s[:cut] + "…"
}
