package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The check over the repository's own docs: what `make lint` runs.
func TestRepositoryDocsCiteRealSections(t *testing.T) {
	files, err := filepath.Glob("../../../docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	files = append(files, "../../../README.md")
	bad, err := check(files, os.ReadFile)
	require.NoError(t, err)
	require.Empty(t, bad)
}

// A planted wrong citation in a docs file is reported with its file and line.
func TestPlantedWrongCitationIsRejected(t *testing.T) {
	docs := map[string]string{
		"good.md": "SotW sends the whole type (xDS protocol,\n\"Grouping Resources into Responses\").\n",
		"bad.md":  "line one\nDelta resumes (xDS protocol, \"Reconnect\").\n",
	}
	read := func(f string) ([]byte, error) { return []byte(docs[f]), nil }
	bad, err := check([]string{"good.md", "bad.md"}, read)
	require.NoError(t, err)
	require.Len(t, bad, 1)
	require.Contains(t, bad[0], "bad.md:2:")
	require.Contains(t, bad[0], `"Reconnect" is not a section title`)
}
