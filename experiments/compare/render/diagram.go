package render

import (
	"fmt"
	"strings"

	"github.com/xds-workbench/lab/experiments/compare"
	"github.com/xds-workbench/lab/experiments/compare/internal/words"
)

// capMessages splits a diagram for rendering: the first max messages, and a note
// summarizing the rest by kind ("" when nothing is hidden).
func capMessages(msgs []compare.Message, max int) ([]compare.Message, string) {
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
		{compare.KindNack, "nack"}, {compare.KindSend, "send"}, {compare.KindAck, "ack"}, {compare.KindRequest, "request"}, {compare.KindOnDemand, "on-demand subscribe"}, {compare.KindStale, "stale request"},
		{compare.KindUnmatched, "unmatched answer"}, {compare.KindDataPlane, "data-plane request"}, {compare.KindPublish, "publish"},
		{compare.KindStreamOpen, "stream open"}, {compare.KindStreamClose, "stream close"}, {compare.KindRefused, "refusal"},
	} {
		if n := counts[k.kind]; n > 0 {
			parts = append(parts, words.Count(n, k.word))
		}
	}
	return msgs[:max], fmt.Sprintf("... %d more (%s)", len(rest), strings.Join(parts, ", "))
}
