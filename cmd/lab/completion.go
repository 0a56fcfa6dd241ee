package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/xds-workbench/lab/experiments/compare/render"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/publish"
	"github.com/xds-workbench/lab/shared/scenario"
	"github.com/xds-workbench/lab/shared/xdslog"
	"github.com/xds-workbench/lab/sotw"
)

// Shell completion of flag values. Cobra provides `lab completion bash|zsh|fish|powershell`
// and the hidden `lab __complete` the scripts call; registerCompletions tells it the values
// of every flag of the tree that has a fixed set, by flag name, so each command with a
// --mode, --cache, --scenario, ... completes it alike.

// completionModes, completionCaches, completionVersions are the protocol, cache and SotW
// version-strategy names.
var (
	completionModes    = modeNames(protocol.Modes)
	completionCaches   = []string{string(publish.SnapshotCache), string(publish.SnapshotCacheNoADS), string(publish.LinearCache), string(publish.IndexedCache)}
	completionVersions = []string{string(publish.Uniform), string(publish.PerType)}
)

// registerCompletions registers the value completions of cmd's flags and its subcommands'.
func registerCompletions(cmd *cobra.Command) {
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if fn := flagCompletion(cmd, f); fn != nil {
			_ = cmd.RegisterFlagCompletionFunc(f.Name, fn) // each flag is registered once
		}
	})
	for _, c := range cmd.Commands() {
		registerCompletions(c)
	}
}

type completionFunc = func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective)

// flagCompletion is the completion of one flag, nil when its values are not a known set.
func flagCompletion(cmd *cobra.Command, f *pflag.Flag) completionFunc {
	_, list := f.Value.(choiceListValue)
	switch f.Name {
	case "mode", "modes":
		return fixedCompletion(completionModes, list)
	case "cache":
		return fixedCompletion(completionCaches, list)
	case "sotw-versions":
		return fixedCompletion(completionVersions, list)
	case "nack-policy":
		return fixedCompletion(sotw.PolicyNames(), false)
	case "format":
		if cmd.Name() == "compare" {
			return fixedCompletion(render.Formats, false)
		}
	case "scenario":
		names := scenario.PackNames()
		if cmd.Name() == "run" {
			names = append(names, scenarioAll)
		}
		return scenarioCompletion(names)
	case "step":
		if cmd.Name() == "compare" {
			return compareStepCompletion
		}
	case "steps":
		if cmd.Name() == "run" {
			return runStepsCompletion
		}
	}
	if c, ok := f.Value.(choiceValue); ok { // --client, --protocol, ...
		return fixedCompletion(c.values, false)
	}
	return nil
}

// fixedCompletion completes one of values; list: a comma list of distinct values, the
// part after the last comma completed among those not listed yet.
func fixedCompletion(values []string, list bool) completionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if !list {
			return slices.Clone(values), cobra.ShellCompDirectiveNoFileComp
		}
		done, _ := splitLast(toComplete)
		var listed []string
		if done != "" {
			listed = strings.Split(strings.TrimSuffix(done, ","), ",")
		}
		var out []cobra.Completion
		for _, v := range values {
			if !slices.Contains(listed, v) {
				out = append(out, done+v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

// splitLast splits a comma list before its last item: "a,b,c" is "a,b," and "c".
func splitLast(s string) (done, last string) {
	i := strings.LastIndexByte(s, ',')
	return s[:i+1], s[i+1:]
}

// scenarioCompletion completes a built-in scenario name or a scenario file: directories
// and .yaml/.yml files under what is typed.
func scenarioCompletion(names []string) completionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		out := slices.Clone(names)
		files, dirs := yamlFiles(toComplete)
		out = append(out, files...)
		out = append(out, dirs...)
		directive := cobra.ShellCompDirectiveNoFileComp
		if len(dirs) > 0 {
			directive |= cobra.ShellCompDirectiveNoSpace // a directory is completed further
		}
		return out, directive
	}
}

// yamlFiles lists the .yaml/.yml files and the directories (with a trailing slash) whose
// path starts with prefix.
func yamlFiles(prefix string) (files, dirs []string) {
	matches, _ := filepath.Glob(globEscape(prefix) + "*")
	for _, m := range matches {
		if strings.HasPrefix(filepath.Base(m), ".") && !strings.HasPrefix(filepath.Base(prefix), ".") {
			continue
		}
		fi, err := os.Stat(m)
		switch {
		case err != nil:
		case fi.IsDir():
			dirs = append(dirs, m+string(filepath.Separator))
		case strings.HasSuffix(m, ".yaml") || strings.HasSuffix(m, ".yml"):
			files = append(files, m)
		}
	}
	return files, dirs
}

// globEscape quotes filepath.Match's special characters.
func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}

// scenarioArgCompletion completes lab scenarios' one argument: a built-in name or a file.
func scenarioArgCompletion(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return scenarioCompletion(scenario.PackNames())(cmd, args, toComplete)
}

// runStepsCompletion completes lab run --steps, a comma list, with the steps of the
// --scenario given (the default one when none is); nothing for all or a bad scenario.
func runStepsCompletion(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	f := cmd.Flag("scenario")
	if f == nil || f.Value.String() == scenarioAll {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	sc, err := scenario.Load(f.Value.String())
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, len(sc.Steps))
	for i, st := range sc.Steps {
		names[i] = st.Name
	}
	return fixedCompletion(names, true)(cmd, args, toComplete)
}

// compareStepCompletion completes --step of lab compare with the steps the runs given as
// arguments share, in the first run's order (compare compares only shared steps); runs
// that cannot be read are left out.
func compareStepCompletion(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var shared []string
	first := true
	for _, run := range args {
		steps, err := xdslog.StepNames(run)
		if err != nil || len(steps) == 0 {
			continue
		}
		if first {
			shared, first = steps, false
			continue
		}
		shared = slices.DeleteFunc(shared, func(s string) bool { return !slices.Contains(steps, s) })
	}
	return shared, cobra.ShellCompDirectiveNoFileComp
}
