package loopback

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Holder is a process with a socket listening on a port.
type Holder struct {
	PID  int
	Comm string // /proc/PID/comm: the command name, at most 15 bytes
}

func (h Holder) String() string { return fmt.Sprintf("pid %d (%s)", h.PID, h.Comm) }

// FindHolder asks /proc which process listens on TCP port (IPv4 or IPv6). ok is false
// when /proc does not tell: no /proc, or the socket belongs to a process whose fds this
// user may not read.
func FindHolder(port int) (Holder, bool) { return findHolder("/proc", port) }

// findHolder reads proc, a /proc tree (a fake one in tests): the LISTEN sockets of
// net/tcp and net/tcp6 give the socket's inode, and the process is the one with an fd
// linked to socket:[inode].
func findHolder(proc string, port int) (Holder, bool) {
	inodes := map[string]bool{}
	for _, f := range []string{"tcp", "tcp6"} {
		listenInodes(filepath.Join(proc, "net", f), port, inodes)
	}
	if len(inodes) == 0 {
		return Holder{}, false
	}
	ents, err := os.ReadDir(proc)
	if err != nil {
		return Holder{}, false
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if holdsSocket(filepath.Join(proc, e.Name(), "fd"), inodes) {
			comm, err := os.ReadFile(filepath.Join(proc, e.Name(), "comm"))
			if err != nil {
				return Holder{}, false
			}
			return Holder{PID: pid, Comm: strings.TrimSpace(string(comm))}, true
		}
	}
	return Holder{}, false
}

// tcpListen is the st column of /proc/net/tcp for a listening socket.
const tcpListen = "0A"

// listenInodes adds to inodes the inode of every LISTEN socket on port in path, a
// /proc/net/tcp-format table ("sl local_address rem_address st ... inode ...", the local
// address as hex ADDR:PORT).
func listenInodes(path string, port int, inodes map[string]bool) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != tcpListen {
			continue
		}
		_, hexPort, ok := strings.Cut(fields[1], ":")
		if !ok {
			continue
		}
		p, err := strconv.ParseUint(hexPort, 16, 16)
		if err != nil || int(p) != port || fields[9] == "0" {
			continue
		}
		inodes[fields[9]] = true
	}
}

// holdsSocket reports whether one of the links in fdDir is socket:[inode] for an inode
// in inodes. An unreadable directory (another user's process) holds nothing we can see.
func holdsSocket(fdDir string, inodes map[string]bool) bool {
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err != nil {
			continue
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok && inodes[strings.TrimSuffix(inode, "]")] {
			return true
		}
	}
	return false
}
