package loopback

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAddr(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:18000", "localhost:18000", "LOCALHOST:18000"} {
		h, p, err := ParseAddr(ok)
		require.NoError(t, err, ok)
		assert.Equal(t, "127.0.0.1", h, "%s means 127.0.0.1, never a resolver's answer", ok)
		assert.Equal(t, 18000, p)
	}
	for bad, want := range map[string]string{
		"0.0.0.0:18000":    `address "0.0.0.0:18000": not loopback (only 127.0.0.1 or localhost is allowed)`,
		"[::1]:18000":      `address "[::1]:18000": not loopback (only 127.0.0.1 or localhost is allowed)`,
		"10.0.0.1:18000":   `address "10.0.0.1:18000": not loopback (only 127.0.0.1 or localhost is allowed)`,
		"example.com:1":    `address "example.com:1": not loopback (only 127.0.0.1 or localhost is allowed)`,
		"127.0.0.1:0":      `address "127.0.0.1:0": port 0 is outside 1-65535`,
		"127.0.0.1:70000":  `address "127.0.0.1:70000": port 70000 is outside 1-65535`,
		"127.0.0.1:abc":    `address "127.0.0.1:abc": port "abc" is not a number`,
		"127.0.0.1":        `address "127.0.0.1": missing port in address (want 127.0.0.1:PORT)`,
		"":                 `address "": missing port in address (want 127.0.0.1:PORT)`,
		"localhost:-1":     `address "localhost:-1": port -1 is outside 1-65535`,
		"127.0.0.1:1:2:3x": `address "127.0.0.1:1:2:3x": too many colons in address (want 127.0.0.1:PORT)`,
	} {
		_, _, err := ParseAddr(bad)
		require.Error(t, err, bad)
		assert.Equal(t, want, err.Error())
		var ae *AddrError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, strings.TrimPrefix(want, `address "`+bad+`": `), ae.Problem, "Problem is the text without the address")
	}
}

func TestParseListenAddr(t *testing.T) {
	for addr, want := range map[string]int{"127.0.0.1:0": 0, "localhost:0": 0, "127.0.0.1:18000": 18000} {
		p, err := ParseListenAddr(addr)
		require.NoError(t, err, addr)
		assert.Equal(t, want, p)
	}
	for _, bad := range []string{"0.0.0.0:0", "[::1]:0", "127.0.0.1:65536", "127.0.0.1"} {
		_, err := ParseListenAddr(bad)
		assert.Error(t, err, bad)
	}
}

func TestPorts(t *testing.T) {
	for _, ok := range []int{1, 18080, 65535} {
		assert.NoError(t, ValidatePort(ok))
	}
	for _, bad := range []int{0, -1, 65536, 70000} {
		assert.Error(t, ValidatePort(bad))
	}
	_, err := ParsePort("abc")
	assert.ErrorContains(t, err, `"abc" is not a number`)
}

// TestFreePort: FreePort's port is a valid port that binds on 127.0.0.1 at once (its
// own probe is closed) and takes connections there; closed, its listener releases it:
// nothing answers on it, and it binds again.
func TestFreePort(t *testing.T) {
	free, err := FreePort()
	require.NoError(t, err)
	t.Cleanup(func() { Release(free) })
	require.NoError(t, ValidatePort(free))
	for range 2 {
		l, err := net.Listen("tcp", Addr(free))
		require.NoError(t, err, "port %d binds", free)
		bound := l.Addr().(*net.TCPAddr)
		assert.Equal(t, "127.0.0.1", bound.IP.String())
		assert.Equal(t, free, bound.Port)
		c, err := net.DialTimeout("tcp", Addr(free), 5*time.Second)
		require.NoError(t, err, "a client reaches 127.0.0.1:%d", free)
		require.NoError(t, c.Close())
		require.NoError(t, l.Close())
		_, err = net.DialTimeout("tcp", Addr(free), 5*time.Second)
		assert.ErrorIs(t, err, syscall.ECONNREFUSED, "nothing listens once the listener is closed")
	}
}

// TestListenNamesThePortAndItsHolder: a port held by this process, or by another one,
// gives an error naming the port and the holder's pid and command name (from /proc).
func TestListenNamesThePortAndItsHolder(t *testing.T) {
	self, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Skip("no /proc")
	}
	t.Run("this process", func(t *testing.T) {
		l, err := Listen(0)
		require.NoError(t, err)
		defer l.Close()
		port := l.Addr().(*net.TCPAddr).Port
		_, err = Listen(port)
		require.Error(t, err)
		want := fmt.Sprintf("listen on 127.0.0.1:%d: address already in use by pid %d (%s)", port, os.Getpid(), strings.TrimSpace(string(self)))
		assert.Equal(t, want, err.Error())
		assert.True(t, errors.Is(err, syscall.EADDRINUSE), "the cause stays visible to errors.Is")
		var inUse *InUseError
		require.ErrorAs(t, err, &inUse)
		assert.Equal(t, port, inUse.Port)
	})
	t.Run("another process", func(t *testing.T) {
		pid, port := startHolder(t)
		_, err := Listen(port)
		require.Error(t, err)
		assert.Equal(t, fmt.Sprintf("listen on 127.0.0.1:%d: address already in use by pid %d (portholder)", port, pid), err.Error())
	})
}

// startHolder re-executes this test binary, under the name "portholder" (a symlink,
// so /proc/PID/comm differs from ours), as a process that listens on a free port until
// its stdin closes. It returns the child's pid and port.
func startHolder(t *testing.T) (pid, port int) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	link := filepath.Join(t.TempDir(), "portholder")
	require.NoError(t, os.Symlink(exe, link))
	cmd := exec.Command(link, "-test.run=^TestHelperHoldPort$")
	cmd.Env = append(os.Environ(), "LOOPBACK_HOLD_PORT=1")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close() // the helper exits at end of input
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "holding "); ok {
				lines <- p
				break
			}
		}
		_, _ = bufio.NewReader(stdout).WriteTo(discard{}) // keep the pipe drained
	}()
	select {
	case p := <-lines:
		port, err = strconv.Atoi(p)
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the holder never said which port it holds")
	}
	return cmd.Process.Pid, port
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestHelperHoldPort is the child of startHolder, not a test of its own.
func TestHelperHoldPort(t *testing.T) {
	if os.Getenv("LOOPBACK_HOLD_PORT") != "1" {
		return // only meaningful as the child of TestListenNamesThePortAndItsHolder
	}
	l, err := Listen(0)
	require.NoError(t, err)
	defer l.Close()
	fmt.Printf("holding %d\n", l.Addr().(*net.TCPAddr).Port)
	_, _ = bufio.NewReader(os.Stdin).WriteTo(discard{}) // until the parent closes stdin
}

// TestFindHolderWhenProcDoesNotTell: a fake /proc whose listening socket is linked from
// no readable fd (what another user's process looks like) names no holder, and the
// error then names the port only.
func TestFindHolderWhenProcDoesNotTell(t *testing.T) {
	proc := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(proc, "net"), 0o755))
	table := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: 0100007F:4650 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0 100 0 0 10 0\n" +
		"   1: 0100007F:4651 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0 100 0 0 10 0\n"
	require.NoError(t, os.WriteFile(filepath.Join(proc, "net", "tcp"), []byte(table), 0o644))
	// pid 7 has a socket, but not the listening one; pid 8's fds cannot be read.
	require.NoError(t, os.MkdirAll(filepath.Join(proc, "7", "fd"), 0o755))
	require.NoError(t, os.Symlink("socket:[4343]", filepath.Join(proc, "7", "fd", "3")))
	require.NoError(t, os.WriteFile(filepath.Join(proc, "7", "comm"), []byte("other\n"), 0o644))
	_, ok := findHolder(proc, 0x4650)
	assert.False(t, ok, "no readable fd links to the listening socket")
	_, ok = findHolder(proc, 0x4651)
	assert.False(t, ok, "a connected (not listening) socket holds no port")

	// Once an fd of pid 9 links to it, /proc tells.
	require.NoError(t, os.MkdirAll(filepath.Join(proc, "9", "fd"), 0o755))
	require.NoError(t, os.Symlink("socket:[4242]", filepath.Join(proc, "9", "fd", "5")))
	require.NoError(t, os.WriteFile(filepath.Join(proc, "9", "comm"), []byte("lab\n"), 0o644))
	h, ok := findHolder(proc, 0x4650)
	require.True(t, ok)
	assert.Equal(t, Holder{PID: 9, Comm: "lab"}, h)

	assert.Equal(t, "listen on 127.0.0.1:18000: address already in use", (&InUseError{Port: 18000}).Error())
	assert.Equal(t, "listen on 127.0.0.1:18000: address already in use by pid 9 (lab)", (&InUseError{Port: 18000, Holder: &h}).Error())
}
