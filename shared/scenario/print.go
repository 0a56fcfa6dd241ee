package scenario

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Print writes what `lab scenarios` prints: with show "", the built-in pack, one line
// each (name, steps, the description's first sentence); with a built-in name, its file
// as committed, the format a user's own scenario copies; with a file, the file checked
// and its steps listed.
func Print(out io.Writer, show string) error {
	if show == "" {
		pack, err := Pack()
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, sc := range pack {
			fmt.Fprintf(tw, "%s\t%d steps\t%s\n", sc.Name, len(sc.Steps), firstSentence(sc.Description))
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("write the list: %w", err)
		}
		return nil
	}
	if src, err := BuiltinSource(show); err == nil {
		if _, err := out.Write(src); err != nil {
			return fmt.Errorf("write scenario: %w", err)
		}
		return nil
	}
	sc, err := Load(show)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s (%s): %s\n", sc.Name, sc.File, sc.Description)
	for i, st := range sc.Steps {
		fmt.Fprintf(out, "  %d. %s [%s] %s\n", i+1, st.Name, st.Action, st.Proves)
	}
	return nil
}

// firstSentence keeps a description's first sentence for the one-line list.
func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}
