package compare

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The few words and figures every section writes alike: counts with their noun and
// ratios of two totals. Each has one helper, so a report never says "1 responses" in one
// place and "1 response" in another, nor a ratio as 0.00 here and 1/2554 there.

// count is "1 resource" or "3 resources": every count printed with its noun goes
// through it.
func count(n int, word string) string {
	switch {
	case n == 1:
		return "1 " + word
	case strings.HasSuffix(word, "sh"):
		return fmt.Sprintf("%d %ses", n, word) // publishes
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// ratioText is a over b as a reader can weigh it: "30.87" when a is larger, "1/2554"
// when a is smaller (a plain quotient would print 1,729 bytes over 4,415,311 as 0.00),
// "1" when equal, "0" when a is 0 and "∞" when only b is. A quotient has at most two
// decimals, none from 100 up (they say nothing at that size), and no trailing zeros.
func ratioText(a, b int) string {
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
