// Package loopback enforces the workbench's one network rule: everything it starts,
// and everything it tells Envoy to use, lives on 127.0.0.1.
package loopback

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Host is the only address the workbench binds or points Envoy at.
const Host = "127.0.0.1"

// DefaultXDSAddr is the workbench's xDS address when none is given: where its control
// plane listens (controlplane.DefaultAddr) and where a rendered bootstrap points Envoy
// (bootstrap.DefaultXDSAddr). It lives here, below both, so neither side takes its
// default from the other.
const DefaultXDSAddr = Host + ":18000"

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

// AddrError is a refused address. Problem says what is wrong without repeating the
// address, so a caller that already shows it (a flag error) can use Problem alone.
type AddrError struct {
	Addr    string
	Problem string
}

func (e *AddrError) Error() string { return fmt.Sprintf("address %q: %s", e.Addr, e.Problem) }

// ParseAddr splits "127.0.0.1:PORT" (PORT 1-65535) and refuses any other host.
// "localhost" is accepted and means 127.0.0.1: it is never resolved, since a resolver
// may answer ::1 or something else entirely.
func ParseAddr(addr string) (host string, port int, err error) {
	port, err = parseAddr(addr, false)
	if err != nil {
		return "", 0, err
	}
	return Host, port, nil
}

// ParseListenAddr is ParseAddr for an address to bind: port 0 (a free port) is allowed.
func ParseListenAddr(addr string) (port int, err error) { return parseAddr(addr, true) }

func parseAddr(addr string, allowZero bool) (int, error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		problem := err.Error()
		var ae *net.AddrError
		if errors.As(err, &ae) {
			problem = ae.Err // SplitHostPort's own text repeats the address
		}
		return 0, &AddrError{addr, problem + " (want " + Host + ":PORT)"}
	}
	if h != Host && !strings.EqualFold(h, "localhost") {
		return 0, &AddrError{addr, "not loopback (only " + Host + " or localhost is allowed)"}
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return 0, &AddrError{addr, fmt.Sprintf("port %q is not a number", p)}
	}
	if port == 0 && allowZero {
		return 0, nil
	}
	if err := ValidatePort(port); err != nil {
		return 0, &AddrError{addr, err.Error()}
	}
	return port, nil
}

// Addr formats 127.0.0.1:port.
func Addr(port int) string { return net.JoinHostPort(Host, strconv.Itoa(port)) }

// InUseError is a port that could not be bound because something listens on it.
// Holder is who, when /proc tells.
type InUseError struct {
	Port   int
	Holder *Holder
	Err    error
}

func (e *InUseError) Error() string {
	s := fmt.Sprintf("listen on %s: address already in use", Addr(e.Port))
	if e.Holder != nil {
		s += " by " + e.Holder.String()
	}
	return s
}

func (e *InUseError) Unwrap() error { return e.Err }

// Listen binds 127.0.0.1:port. A port already in use yields an *InUseError that names
// the port and, when /proc tells, the process listening on it.
//
// Port 0 binds a FreePort, not a port the kernel picks: Envoy dials what the workbench
// serves (xDS, backends) and keeps redialling a port after its server went away, so a
// kernel-picked port reused by another test's server drew a foreign Envoy's stream into
// it (seen as a second ADS stream in the soak under `make flake`). Reserved ports are
// never handed to two live workbench processes.
//
// A listener on a port Listen picked gives the port back (Release) when it is closed:
// its server is done with it.
func Listen(port int) (net.Listener, error) {
	picked := port == 0
	if !picked {
		if err := ValidatePort(port); err != nil {
			return nil, err
		}
	} else {
		var err error
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	l, err := net.Listen("tcp", Addr(port))
	if err == nil && picked {
		return &releasingListener{Listener: l, port: port}, nil
	}
	if err != nil {
		if picked {
			Release(port)
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			e := &InUseError{Port: port, Err: err}
			if h, ok := FindHolder(port); ok {
				e.Holder = &h
			}
			return nil, e
		}
		return nil, fmt.Errorf("listen on %s: %w", Addr(port), err)
	}
	return l, nil
}

// releasingListener releases its picked port once closed.
type releasingListener struct {
	net.Listener
	port int
	once sync.Once
}

func (l *releasingListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() { Release(l.port) })
	return err
}
