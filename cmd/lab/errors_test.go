package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xds-workbench/lab/shared/scenario"
)

// execLab runs the CLI through main's execute, as the binary does (the one error line on
// stderr, the exit code), and returns the exit code and both outputs.
func execLab(args ...string) (code int, stdout, stderr string) {
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	code = execute(root, args, &errOut)
	return code, out.String(), errOut.String()
}

// TestErrorsNameTheCommand walks the error cases of every command through the real
// root command and execute, the function main calls: each prints exactly one line,
// "lab <command>: --flag VALUE: what is wrong", with the command's name once, exits 1,
// and prints nothing on standard output.
func TestErrorsNameTheCommand(t *testing.T) {
	t.Chdir(t.TempDir()) // serve's and inventory's default logs land here, if anywhere
	for _, c := range []struct {
		args []string
		want string // the whole line
	}{
		{[]string{"bench", "--clusters", "abc"}, "lab bench: --clusters abc: not a whole number (want a comma list of cluster counts >= 1, e.g. 10,100)"},
		{[]string{"bench", "--repeat", "0"}, "lab bench: --repeat 0: outside 1-1000"},
		{[]string{"bench", "--modes", "grpc"}, "lab bench: --modes grpc: unknown protocol (want sotw or delta)"},
		{[]string{"compare"}, "lab compare: want two or more runs, or a folder of runs (usage: lab compare (RUN_A RUN_B [RUN...] | FOLDER) [flags])"},
		{[]string{"compare", "a", "b", "--format", "pdf"}, "lab compare: --format pdf: unknown format (want text, markdown, json or html)"},
		{[]string{"bootstrap", "--admin-port", "70000"}, "lab bootstrap: --admin-port 70000: outside 0-65535"},
		{[]string{"bootstrap", "--mode", "grpc"}, "lab bootstrap: --mode grpc: unknown protocol (want sotw or delta)"},
		{[]string{"run", "--mode", "grpc"}, "lab run: --mode grpc: unknown protocol (want sotw or delta)"},
		{[]string{"serve", "--mode", "grpc"}, "lab serve: --mode grpc: unknown protocol (want sotw or delta)"},
		{[]string{"run", "--mode", "delta", "--step-timeout", "-1s"}, "lab run: --step-timeout -1s: outside 1s-1h"},
		{[]string{"run", "--mode", "delta", "--client", "sim", "--drain-time", "-1s"}, "lab run: --drain-time -1s: must not be negative"},
		{[]string{"run", "--mode", "delta", "--xds-addr", "0.0.0.0:18000"}, "lab run: --xds-addr 0.0.0.0:18000: not loopback (only 127.0.0.1 or localhost is allowed)"},
		{[]string{"serve", "--mode", "sotw", "--max-streams", "0"}, "lab serve: --max-streams 0: outside 1-1000000"},
		{[]string{"serve", "--mode", "sotw", "--xds-addr", "10.0.0.1:0"}, "lab serve: --xds-addr 10.0.0.1:0: not loopback (only 127.0.0.1 or localhost is allowed)"},
		{[]string{"inventory", "--port", "70000"}, "lab inventory: --port 70000: outside 0-65535"},
		{[]string{"sweep", "--rates", "5,5"}, "lab sweep: --rates 5,5: 5 is listed twice (want requests per second, 1-20000 each)"},
		{[]string{"sweep", "--rates", "2"}, "lab sweep: --rates 2: load connections 4: more than the rate (2 per second); each connection needs at least one request per second"},
		{[]string{"sweep", "--repeat", "0"}, "lab sweep: --repeat 0: outside 1-20"},
		{[]string{"inventory", "--port", "0", "--delay", "1h"}, "lab inventory: --delay 1h0m0s: outside 0s-30s"},
		{[]string{"inventory", "--port", "0", "--idle-timeout", "-1s"}, "lab inventory: --idle-timeout -1s: must not be negative"},
		{[]string{"run", "--frobnicate"}, "lab run: --frobnicate: unknown flag (see lab run --help)"},
		{[]string{"serve", "--mod", "sotw"}, "lab serve: --mod: unknown flag; did you mean --mode? (see lab serve --help)"},
		{[]string{"run", "--mode", "sotw", "--scenraio", "teaching"}, "lab run: --scenraio: unknown flag; did you mean --scenario? (see lab run --help)"},
		{[]string{"run", "--mode", "sotw", "--scenario", "teachnig"}, `lab run: no built-in scenario "teachnig" and no such file; did you mean teaching? (built-in: ` + strings.Join(scenario.PackNames(), ", ") + ")"},
		{[]string{"compare", "--formt", "html", "a", "b"}, "lab compare: --formt: unknown flag; did you mean --format? (see lab compare --help)"},
		// Errors from inside a command carry no second prefix ("serve: serve: ...").
		{[]string{"serve", "--mode", "sotw", "--xds-addr", "127.0.0.1:0", "--log", "/nonexistent/dir/xds.log"},
			"lab serve: open xds.log: open /nonexistent/dir/xds.log: no such file or directory"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, stdout, stderr := execLab(c.args...)
			assert.Equal(t, 1, code)
			assert.Equal(t, c.want+"\n", stderr)
			assert.Regexp(t, `^lab `+regexp.QuoteMeta(c.args[0])+`: (--[a-z-]+( \S+)?: |want two or more runs|open xds.log|no built-in scenario)`, stderr)
			assert.Equal(t, 1, strings.Count(stderr, c.args[0]+":"), "the command is named once")
			assert.Empty(t, stdout)
		})
	}
}

// TestUnknownCommandSuggests: a mistyped command is one line naming what was typed and,
// within two edits (shared/suggest), the command meant; other words get no guess, and
// known commands, help and completion are untouched.
func TestUnknownCommandSuggests(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serv"}, "lab: serv: unknown command; did you mean serve? (see lab --help)\n"},
		{[]string{"compre", "a", "b"}, "lab: compre: unknown command; did you mean compare? (see lab --help)\n"},
		{[]string{"--help=false", "scenaros"}, "lab: scenaros: unknown command; did you mean scenarios? (see lab --help)\n"},
		{[]string{"hepl"}, "lab: hepl: unknown command; did you mean help? (see lab --help)\n"},
		{[]string{"frobnicate"}, "lab: frobnicate: unknown command (see lab --help)\n"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, stdout, stderr := execLab(c.args...)
			assert.Equal(t, 1, code)
			assert.Equal(t, c.want, stderr)
			assert.Empty(t, stdout)
		})
	}
	for _, args := range [][]string{{"scenarios"}, {"help", "serve"}, {"completion", "bash"}, {"__complete", "serve", "--mo"}, {}} {
		code, stdout, stderr := execLab(args...)
		assert.Equal(t, 0, code, "%v: %s", args, stderr)
		assert.NotEmpty(t, stdout, "%v", args)
	}
}
