package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/inventory"
	"github.com/xds-workbench/lab/shared/syncbuf"
)

// startInventoryCmd runs `lab inventory args...` in the background until cancel, and
// returns the address from its listening line.
func startInventoryCmd(t *testing.T, name string, args ...string) (addr string, out *syncbuf.Buffer, done <-chan error, cancel func()) {
	t.Helper()
	out = &syncbuf.Buffer{}
	root := newRootCmd()
	root.SetOut(out)
	root.SetErr(out)
	root.SetArgs(append([]string{"inventory", "--name", name, "--port", "0"}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	errc := make(chan error, 1)
	go func() { errc <- root.ExecuteContext(ctx) }()

	lineRE := regexp.MustCompile(`inventory ` + name + ` listening on http://(127\.0\.0\.1:\d+)/quote `)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := lineRE.FindStringSubmatch(out.String()); m != nil {
			return m[1], out, errc, cancel
		}
		select {
		case err := <-errc:
			t.Fatalf("inventory exited early: %v; output %q", err, out.String())
		default:
		}
		require.True(t, time.Now().Before(deadline), "no listening line; output %q", out.String())
		time.Sleep(10 * time.Millisecond)
	}
}

func inventoryQuote(t *testing.T, addr, requestID string) inventory.Quote {
	t.Helper()
	// No keep-alive, so the command's graceful stop has no idle connection to wait for.
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}, Timeout: 5 * time.Second}
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/quote?sku=paper", nil)
	require.NoError(t, err)
	req.Header.Set("x-request-id", requestID)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var q inventory.Quote
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&q))
	return q
}

func stopInventoryCmd(t *testing.T, done <-chan error, cancel func()) {
	t.Helper()
	cancel() // what SIGINT does via signal.NotifyContext
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("inventory did not stop")
	}
}

func TestInventoryCommand(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "v9.log")
	addr, out, done, cancel := startInventoryCmd(t, "v9", "--log", logPath)
	assert.Contains(t, out.String(), "(log "+logPath+")")
	q := inventoryQuote(t, addr, "cli-1")
	assert.Equal(t, "v9", q.Backend)
	assert.Equal(t, "cli-1", q.RequestID)
	stopInventoryCmd(t, done, cancel)

	line, ok, err := inventory.LookupFile(logPath, "cli-1")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 200, line.Status)
}

func TestInventoryCommandDefaultLog(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	addr, out, done, cancel := startInventoryCmd(t, "v7")
	assert.Contains(t, out.String(), "(log inventory-v7.log)")
	inventoryQuote(t, addr, "cli-2")
	stopInventoryCmd(t, done, cancel)
	_, ok, err := inventory.LookupFile(filepath.Join(dir, "inventory-v7.log"), "cli-2")
	require.NoError(t, err)
	assert.True(t, ok)
}

func TestInventoryCommandErrors(t *testing.T) {
	b, err := inventory.Start("busy", 0, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Stop(context.Background()) })
	dir := t.TempDir()
	t.Chdir(dir)
	_, _, err = runLabArgs(t, "inventory", "--name", "v1", "--port", strconv.Itoa(b.Port()))
	require.Error(t, err)
	assert.Contains(t, err.Error(), strconv.Itoa(b.Port()))
	assert.NotContains(t, err.Error(), "\n")
	_, statErr := os.Stat(filepath.Join(dir, "inventory-v1.log"))
	assert.ErrorIs(t, statErr, os.ErrNotExist, "a failed start leaves no log file")

	_, _, err = runLabArgs(t, "inventory", "--name", "../evil", "--port", "0")
	assert.ErrorContains(t, err, "name")
	_, _, err = runLabArgs(t, "inventory", "--port", "99999")
	assert.ErrorContains(t, err, "99999")
}

// TestInventoryRefusesBadFlags: one line "--flag VALUE: what is wrong" each, before
// anything starts: no listening line, no log file.
func TestInventoryRefusesBadFlags(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"port high":           {[]string{"--port", "99999"}, "--port 99999: outside 0-65535"},
		"port negative":       {[]string{"--port", "-1"}, "--port -1: outside 0-65535"},
		"port word":           {[]string{"--port", "http"}, "--port http: not a number (want a port, 0-65535)"},
		"port address":        {[]string{"--port", "0.0.0.0:18080"}, "--port 0.0.0.0:18080: an address, not a port (want only the port: the host is always 127.0.0.1)"},
		"positional argument": {[]string{"extra"}, "extra: unexpected argument (usage: lab inventory [flags])"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			stdout, _, err := runLabArgs(t, append([]string{"inventory"}, c.args...)...)
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
			assert.Empty(t, stdout)
			ents, _ := os.ReadDir(".")
			assert.Empty(t, ents, "no log file")
		})
	}
}
