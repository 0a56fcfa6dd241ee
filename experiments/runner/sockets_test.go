package runner

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/experiments/client"
	"github.com/xds-workbench/lab/experiments/envoy/envoytest"
	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/scenario"
)

// listener is one listening TCP socket of a process.
type listener struct {
	pid  int
	ip   net.IP
	port int
}

func (l listener) String() string {
	return fmt.Sprintf("pid %d listens on %s", l.pid, net.JoinHostPort(l.ip.String(), strconv.Itoa(l.port)))
}

// socketInodes maps the socket inodes open in pid to pid, from /proc/PID/fd.
func socketInodes(pid int, into map[string]int) error {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok {
			into[strings.TrimSuffix(inode, "]")] = pid
		}
	}
	return nil
}

// procAddr decodes a /proc/net/tcp{,6} address: hex IP in host (little-endian) 32-bit
// words, then the hex port.
func procAddr(s string) (net.IP, int, error) {
	ipHex, portHex, ok := strings.Cut(s, ":")
	if !ok {
		return nil, 0, fmt.Errorf("address %q: no port", s)
	}
	raw, err := hex.DecodeString(ipHex)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return nil, 0, fmt.Errorf("address %q: bad IP", s)
	}
	ip := make(net.IP, len(raw))
	for w := 0; w < len(raw); w += 4 {
		for i := 0; i < 4; i++ {
			ip[w+i] = raw[w+3-i]
		}
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil {
		return nil, 0, fmt.Errorf("address %q: bad port", s)
	}
	return ip, int(port), nil
}

// listeningSockets returns every TCP socket in state LISTEN (0A) owned by one of pids.
func listeningSockets(t *testing.T, pids ...int) []listener {
	t.Helper()
	owner := map[string]int{}
	for _, pid := range pids {
		require.NoError(t, socketInodes(pid, owner))
	}
	var out []listener
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" {
				continue
			}
			pid, ok := owner[fields[9]]
			if !ok {
				continue
			}
			ip, port, err := procAddr(fields[1])
			require.NoError(t, err, "%s: %s", table, sc.Text())
			out = append(out, listener{pid: pid, ip: ip, port: port})
		}
		require.NoError(t, sc.Err())
		f.Close()
	}
	return out
}

func TestProcAddr(t *testing.T) {
	ip, port, err := procAddr("0100007F:4650")
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", ip.String())
	assert.Equal(t, 18000, port)
	ip, _, err = procAddr("0000000000000000FFFF00000100007F:0050")
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", ip.String(), "IPv4-mapped")
	ip, _, err = procAddr("00000000000000000000000001000000:0050")
	require.NoError(t, err)
	assert.Equal(t, "::1", ip.String())
	_, _, err = procAddr("zz:0050")
	assert.Error(t, err)
}

// TestEverythingBindsLoopback walks the listening sockets of a running run (this
// process: control plane and inventories; Envoy: admin and listener) and fails on any
// that is not bound to 127.0.0.1.
func TestEverythingBindsLoopback(t *testing.T) {
	envoytest.Require(t)
	var (
		found  []listener
		want   map[int]string
		walked bool
	)
	_, _, err := faultRun(t, protocol.SotW, Options{Steps: []string{"initial", "port-change", "invalid-route", "recover"},
		BeforeStep: func(_ context.Context, r *Run, st scenario.Step) error {
			if st.Name != "recover" {
				return nil
			}
			walked = true
			e := r.data.client.(*client.Envoy).Process()
			_, admin, err := net.SplitHostPort(e.AdminAddr())
			if err != nil {
				return err
			}
			want = map[int]string{r.ControlPlane().Port(): "xDS", r.o.ListenerPort: "Envoy listener", atoi(admin): "Envoy admin"}
			for _, b := range r.data.backends.all() {
				want[b.Port()] = "inventory " + b.Name()
			}
			found = listeningSockets(t, os.Getpid(), r.ClientPID())
			return nil
		}})
	require.NoError(t, err)
	require.True(t, walked)
	seen := map[int]bool{}
	for _, l := range found {
		t.Log(l)
		seen[l.port] = true
		assert.True(t, l.ip.Equal(net.IPv4(127, 0, 0, 1)), "%s: only 127.0.0.1 may be bound", l)
	}
	for port, what := range want {
		assert.True(t, seen[port], "the %s socket (port %d) was found among the listeners", what, port)
	}
}
