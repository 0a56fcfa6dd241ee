package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/testenv"
)

// shellCommands splits one line of shell into its simple commands, each as its words:
// quotes are kept together and removed, a comment ends the line, and the operators
// && || | ; & < > <( ) end a command (a redirection's file is a command of its own here,
// which no check looks at).
func shellCommands(line string) [][]string {
	var (
		cmds  [][]string
		words []string
		word  strings.Builder
		inTok bool
		quote rune
	)
	endWord := func() {
		if inTok {
			words = append(words, word.String())
			word.Reset()
			inTok = false
		}
	}
	endCmd := func() {
		endWord()
		if len(words) > 0 {
			cmds = append(cmds, words)
			words = nil
		}
	}
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inTok = r, true
		case r == '#' && !inTok:
			endCmd()
			return cmds
		case r == ' ' || r == '\t':
			endWord()
		case strings.ContainsRune("&|;<>()", r):
			endCmd()
		default:
			word.WriteRune(r)
			inTok = true
		}
	}
	endCmd()
	return cmds
}

func TestShellCommands(t *testing.T) {
	assert.Equal(t, [][]string{{"bin/lab", "compare", "--step", "(no step)", "a", "b"}},
		shellCommands(`bin/lab compare --step "(no step)" a b   # comment`))
	assert.Equal(t, [][]string{{"source"}, {"bin/lab", "completion", "bash"}}, shellCommands(`source <(bin/lab completion bash)`))
	assert.Equal(t, [][]string{{"bin/lab", "bootstrap"}, {"x.yaml"}, {"envoy", "-c", "x.yaml"}},
		shellCommands(`bin/lab bootstrap > x.yaml && envoy -c x.yaml`))
	assert.Empty(t, shellCommands("# a comment"))
}

// TestREADMECommandsWorkAsWritten: every command of the README's shell blocks runs as
// written from the repository root: the CLI is bin/lab (make build), never a bare lab
// that is on no PATH; each bin/lab command names a real command and its flags and
// arguments parse; each make target exists.
func TestREADMECommandsWorkAsWritten(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	blocks := testenv.READMEBlocks(t, "sh")
	require.NotEmpty(t, blocks)
	checked := 0
	for _, block := range blocks {
		for _, line := range block {
			for _, words := range shellCommands(line) {
				switch words[0] {
				case "lab":
					t.Errorf("%q: lab is not on PATH on a fresh clone: write bin/lab (make build)", line)
				case "make":
					for _, target := range words[1:] {
						if !strings.Contains(target, "=") {
							assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(target)+`:`, string(mk), "%q: make target %s", line, target)
						}
					}
				case "bin/lab":
					checkLabCommand(t, line, words[1:])
					checked++
				}
			}
		}
	}
	assert.Greater(t, checked, 30, "the README's bin/lab commands were found")
}

// checkLabCommand parses a bin/lab command line as lab would, without running it.
func checkLabCommand(t *testing.T, line string, args []string) {
	t.Helper()
	root := newRootCmd()
	if !assert.NoError(t, unknownCommand(root, args), line) {
		return
	}
	cmd, rest, err := root.Find(args)
	if !assert.NoError(t, err, line) || !assert.NotEqual(t, root, cmd, "%q names a command", line) {
		return
	}
	if assert.NoError(t, cmd.ParseFlags(rest), line) {
		assert.NoError(t, cmd.ValidateArgs(cmd.Flags().Args()), line)
	}
}
