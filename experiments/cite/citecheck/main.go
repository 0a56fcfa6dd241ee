// Command citecheck checks every protocol citation in the files it is given (README.md
// and docs/*.md, from `make lint`): each must be `xDS protocol, "<section title>"` with
// a title of the protocol document (package cite). It prints one line per bad citation,
// file:line first, and exits 1 when there is any.
package main

import (
	"fmt"
	"os"

	"github.com/xds-workbench/lab/experiments/cite"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: citecheck FILE...")
		os.Exit(2)
	}
	bad, err := check(os.Args[1:], os.ReadFile)
	for _, line := range bad {
		fmt.Fprintln(os.Stderr, line)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "citecheck:", err)
		os.Exit(2)
	}
	if len(bad) > 0 {
		fmt.Fprintf(os.Stderr, "citecheck: %d bad protocol citation(s)\n", len(bad))
		os.Exit(1)
	}
}

// check returns "file:line: what: citation" for every bad citation in files.
func check(files []string, read func(string) ([]byte, error)) ([]string, error) {
	var bad []string
	for _, f := range files {
		b, err := read(f)
		if err != nil {
			return bad, err
		}
		for _, p := range cite.CheckText(string(b)) {
			bad = append(bad, fmt.Sprintf("%s:%s", f, p))
		}
	}
	return bad, nil
}
