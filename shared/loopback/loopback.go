// Package loopback enforces the workbench's one network rule: everything it starts,
// and everything it tells Envoy to use, lives on 127.0.0.1.
package loopback

import (
	"fmt"
	"net"
	"strconv"
)

// Host is the only address the workbench binds or points Envoy at.
const Host = "127.0.0.1"

// ValidatePort refuses ports outside 1-65535.
func ValidatePort(port int) error {
	if port < 1 || port > 65535 {
		return fmt.Errorf("port %d is outside 1-65535", port)
	}
	return nil
}

// ParsePort parses a decimal port and validates its range.
func ParsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("port %q is not a number", s)
	}
	if err := ValidatePort(p); err != nil {
		return 0, err
	}
	return p, nil
}

// ParseAddr splits "127.0.0.1:PORT" and refuses any host that is not 127.0.0.1
// ("localhost" is refused too: it may resolve to ::1 or elsewhere).
func ParseAddr(addr string) (host string, port int, err error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("address %q: %w", addr, err)
	}
	if h != Host {
		return "", 0, fmt.Errorf("address %q is not loopback: only %s is allowed", addr, Host)
	}
	port, err = ParsePort(p)
	if err != nil {
		return "", 0, fmt.Errorf("address %q: %w", addr, err)
	}
	return h, port, nil
}

// Addr formats 127.0.0.1:port.
func Addr(port int) string { return net.JoinHostPort(Host, strconv.Itoa(port)) }

// Listen binds 127.0.0.1:port; a port already in use yields an error that names it.
func Listen(port int) (net.Listener, error) {
	if port != 0 {
		if err := ValidatePort(port); err != nil {
			return nil, err
		}
	}
	l, err := net.Listen("tcp", Addr(port))
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", Addr(port), err)
	}
	return l, nil
}

// FreePort asks the kernel for a free loopback port. Another process may take it before
// the caller binds it; tests accept that small race in exchange for real ports.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", Addr(0))
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
