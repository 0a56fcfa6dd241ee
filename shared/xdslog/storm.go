package xdslog

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"os"
	"slices"
	"time"
)

// A NACK storm is the same rejected content sent and rejected again and again on one
// stream and type (go-control-plane's SotW server re-sends a rejected response at once).
// Each pair is two lines; left alone for an hour it fills a disk. Past the log's size
// limit (WithMaxLogBytes) the recorder keeps correlating every pair in memory but writes
// one EventStorm summary per second per stream and type instead, so the log stays
// parseable, no other event is lost, and readers still count every send and NACK.

// StormRepeats is how many times the same content must have been rejected on one stream
// and type before the exchange counts as a storm (the console warning of `lab serve`).
const StormRepeats = 3

// stormWindow is how much of a storm one summary line covers at most.
const stormWindow = time.Second

// WithMaxLogBytes condenses NACK storms once the log holds n bytes (0: never).
func WithMaxLogBytes(n int64) Option { return func(r *Recorder) { r.maxBytes = n } }

// WithLogSize tells the recorder how many bytes the log held before it started (a file
// appended to), so the size limit applies to the file.
func WithLogSize(n int64) Option { return func(r *Recorder) { r.written = n } }

// condensed is the part of a storm not yet written: one stream and type.
type condensed struct {
	first     time.Time
	sends     int
	nacks     int
	bytes     int
	nonce     string // first condensed nonce
	lastNonce string
	// The latest condensed send: its resources stand for all.
	version   string
	resources []Resource
	removed   []string
	nack      *Event // the latest condensed NACK
}

func (c *condensed) addSend(nonce, version string, res []Resource, removed []string, bytes int, at time.Time) {
	if c.sends == 0 && c.nacks == 0 {
		c.first, c.nonce = at, nonce
	}
	c.sends++
	c.bytes += bytes
	c.lastNonce = nonce
	c.version, c.resources, c.removed = version, res, removed
}

func (c *condensed) addNack(e Event) {
	c.nacks++
	c.nack = &e
}

// condenseLocked reports whether a send is to be folded into a storm summary rather than
// written: the log is past its limit and this content was already rejected on the stream.
func (r *Recorder) condenseLocked(t *typeState, res []Resource, removed []string) bool {
	if r.maxBytes <= 0 || r.written < r.maxBytes || t.rejected[fingerprintOf(res, removed)] == 0 {
		return false
	}
	if t.storm == nil {
		t.storm = &condensed{}
	}
	return true
}

// flushStormLocked writes the pending storm summary of one stream and type: always when
// force is set (another event of that stream and type comes next, the stream closes, or
// the recorder is flushed), otherwise once the summary covers a full window.
func (r *Recorder) flushStormLocked(stream int64, typ string, t *typeState, force bool) {
	c := t.storm
	if c == nil || (c.sends == 0 && c.nacks == 0) {
		return
	}
	if !force && r.now().Sub(c.first) < stormWindow {
		return
	}
	first := c.first.UTC()
	e := Event{Event: EventStorm, Stream: stream, Type: typ, Summary: true, Sends: c.sends, Nacks: c.nacks,
		Nonce: c.nonce, LastNonce: c.lastNonce, Bytes: c.bytes, FirstTS: &first}
	e.Version, e.Resources, e.Removed = c.version, c.resources, c.removed
	if c.nack != nil {
		e.SentVersion, e.AcceptedVersion, e.Error, e.Repeat = c.nack.SentVersion, c.nack.AcceptedVersion, c.nack.Error, c.nack.Repeat
	}
	t.storm = &condensed{}
	r.emitLocked(e) // written only: each condensed event was applied and observed already
}

// Flush writes every pending storm summary (call it before closing the log).
func (r *Recorder) Flush() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range slices.SortedFunc(maps.Keys(r.model.streams), func(a, b streamKey) int {
		return cmp.Compare(a.stream, b.stream)
	}) {
		s := r.model.streams[k]
		for _, typ := range slices.Sorted(maps.Keys(s.types)) {
			r.flushStormLocked(k.stream, typ, s.types[typ], true)
		}
	}
}

// Written returns the log's size in bytes as the recorder counts it.
func (r *Recorder) Written() int64 {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.written
}

// BeginSession writes the session line that opens this recorder's part of a log, and
// returns the session's ID. A log that several processes append to (`lab serve` run
// twice with the same --log) is split into sessions by these lines (Sessions).
func (r *Recorder) BeginSession() string {
	if r == nil {
		return ""
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	id := time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
	e := Event{Event: EventSession, Session: id, PID: os.Getpid(), MaxLogBytes: r.maxBytes}
	if r.tapUpstream != "" {
		e.Source, e.Upstream, e.NoPublish = SourceTap, r.tapUpstream, true
	}
	r.Emit(e)
	return id
}
