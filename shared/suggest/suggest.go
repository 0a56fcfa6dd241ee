// Package suggest is the one "did you mean" rule of the workbench: a mistyped flag,
// command, scenario or step name is matched against the names that exist, and the
// closest one within MaxDistance edits (Levenshtein: an insertion, a deletion or a
// substitution each count one) is offered, in one wording (Hint). cmd/lab asks for
// flags and commands, shared/scenario for scenario, step and field names. OrList is how
// a refusal lists the values it wants.
package suggest

import (
	"strings"
	"unicode/utf8"
)

// MaxDistance is the most edits a suggestion may be away from what was typed: "--mod"
// for "--mode" and "teachnig" for "teaching" are within it, an unrelated word is not.
const MaxDistance = 2

// Closest returns the candidate nearest to word within MaxDistance edits, the first in
// candidates order on a tie; ok is false when none is that close or word is one of them.
func Closest(word string, candidates []string) (best string, ok bool) {
	if word == "" {
		return "", false
	}
	bestD := MaxDistance + 1
	for _, c := range candidates {
		if c == word {
			return "", false
		}
		if d := Distance(word, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best, bestD <= MaxDistance
}

// Hint is "; did you mean NAME?" for the closest candidate, to follow what is wrong
// ("unknown flag; did you mean --mode?"), or "" when none is close. prefix is put
// before the name ("--" for a flag).
func Hint(word string, candidates []string, prefix string) string {
	best, ok := Closest(word, candidates)
	if !ok {
		return ""
	}
	return "; did you mean " + prefix + best + "?"
}

// Distance is the Levenshtein distance between a and b, in runes.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) == 0 {
		return utf8.RuneCountInString(b)
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// OrList is how a refusal lists the values it wants: "a", "a or b", "a, b or c".
func OrList(v []string) string {
	if len(v) < 2 {
		return strings.Join(v, "")
	}
	return strings.Join(v[:len(v)-1], ", ") + " or " + v[len(v)-1]
}
