package envoy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
)

// AccessEntry is one line written with resources.AccessLogFormat:
// START_TIME X-REQUEST-ID :PATH RESPONSE_CODE RESPONSE_FLAGS RESPONSE_CODE_DETAILS
// UPSTREAM_HOST UPSTREAM_CLUSTER. Envoy prints "-" for an absent value; it becomes ""
// here (and 0 for Code).
type AccessEntry struct {
	Time            string
	RequestID       string
	Path            string
	Code            int
	Flags           string
	Details         string
	UpstreamHost    string
	UpstreamCluster string
	// Raw is the line as written, without the newline.
	Raw string
}

// ParseAccessLog reads every complete line of an access log. A last line without its
// newline is still being written by Envoy and is left for the next read. A missing file
// is an empty log: Envoy creates it lazily.
func ParseAccessLog(path string) ([]AccessEntry, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read access log: %w", err)
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		b = nil
	}
	var entries []AccessEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		e, err := ParseAccessLine(line)
		if err != nil {
			return nil, fmt.Errorf("access log %s line %d: %w", path, n, err)
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read access log %s: %w", path, err)
	}
	return entries, nil
}

// ParseAccessLine parses one access-log line.
func ParseAccessLine(line string) (AccessEntry, error) {
	f := strings.Fields(line)
	// The request ID is a client-supplied header and may contain spaces; the other
	// fields cannot (Envoy replaces spaces in RESPONSE_CODE_DETAILS with '_'), so the
	// line is read from both ends and the ID is whatever lies between.
	if len(f) < 8 {
		return AccessEntry{}, fmt.Errorf("want 8 fields, got %d in %q", len(f), line)
	}
	tail := f[len(f)-6:]
	code := 0
	if tail[1] != "-" {
		c, err := strconv.Atoi(tail[1])
		if err != nil {
			return AccessEntry{}, fmt.Errorf("response code %q in %q: %w", tail[1], line, err)
		}
		code = c
	}
	return AccessEntry{
		Time:            dash(f[0]),
		RequestID:       dash(strings.Join(f[1:len(f)-6], " ")),
		Path:            dash(tail[0]),
		Code:            code,
		Flags:           dash(tail[2]),
		Details:         dash(tail[3]),
		UpstreamHost:    dash(tail[4]),
		UpstreamCluster: dash(tail[5]),
		Raw:             line,
	}, nil
}

func dash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

// FindAccess returns the entry for requestID (the last one if the ID was reused).
func FindAccess(path, requestID string) (AccessEntry, bool, error) {
	if requestID == "" {
		return AccessEntry{}, false, fmt.Errorf("find access entry: empty request id")
	}
	entries, err := ParseAccessLog(path)
	if err != nil {
		return AccessEntry{}, false, err
	}
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].RequestID == requestID {
			return entries[i], true, nil
		}
	}
	return AccessEntry{}, false, nil
}

// WaitAccess polls the access log until requestID's line appears or ctx ends. Envoy
// flushes access logs on a timer (--file-flush-interval-msec), so a line lags its request.
func WaitAccess(ctx context.Context, path, requestID string) (AccessEntry, error) {
	for {
		e, ok, err := FindAccess(path, requestID)
		if err != nil {
			return AccessEntry{}, err
		}
		if ok {
			return e, nil
		}
		select {
		case <-ctx.Done():
			return AccessEntry{}, fmt.Errorf("access log %s: no line for request %q: %w", path, requestID, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}
