package clientview

import (
	"io"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xds-workbench/lab/shared/protocol"
	"github.com/xds-workbench/lab/shared/xdslog"
)

// wire drives the real xds.log Recorder through one client's stream, as a front end
// does, so the model a test checks against is the one the runner reads.
type wire struct {
	t         *testing.T
	rec       *xdslog.Recorder
	book      *xdslog.LabelBook
	mode      protocol.Mode
	nonce     int
	published map[string]map[string]string
	// acked is, per type, the client's last ACKed version_info (what a SotW client puts
	// in its next request).
	acked map[string]string
	names map[string][]string
	// latest is the latest nonce sent per type: a SotW client's subscription change
	// carries it (a request with an older one is stale, and the server drops it).
	latest map[string]string
}

const node = "teaching-envoy"

func newWire(t *testing.T, mode protocol.Mode) *wire {
	book := xdslog.NewLabelBook()
	w := &wire{t: t, book: book, mode: mode, rec: xdslog.NewRecorder(io.Discard, mode, xdslog.WithLabelBook(book)),
		published: map[string]map[string]string{}, acked: map[string]string{}, names: map[string][]string{}, latest: map[string]string{}}
	w.rec.StreamOpen(1, "127.0.0.1:40000")
	return w
}

// res is one resource of a type with its content hash.
type res struct{ typ, name, hash string }

// publish records a full publish of list under version and makes it the published state.
func (w *wire) publish(version string, list ...res) {
	w.published = map[string]map[string]string{}
	var out []xdslog.Resource
	for _, r := range list {
		if w.published[r.typ] == nil {
			w.published[r.typ] = map[string]string{}
		}
		w.published[r.typ][r.name] = r.hash
		out = append(out, xdslog.Resource{Type: r.typ, Name: r.name, Hash: r.hash})
	}
	w.rec.Publish(version, out, nil)
}

// subscribe is the client's request of typ for names (none: a wildcard).
func (w *wire) subscribe(typ string, names ...string) {
	w.names[typ] = names
	w.request(typ, w.latest[typ], nil)
}

func (w *wire) request(typ, nonce string, errDetail *string) xdslog.Event {
	if w.mode == protocol.Delta {
		return w.rec.Delta(1, typ, xdslog.DeltaRequest{Node: node, Subscribe: w.names[typ], Nonce: nonce, Error: errDetail})
	}
	return w.rec.SotW(1, typ, xdslog.SotWRequest{Node: node, Names: w.names[typ], VersionInfo: w.acked[typ], Nonce: nonce, Error: errDetail})
}

// send records a response of typ under version carrying list (SotW: each resource's
// version is the response's; delta: its hash) and returns its nonce.
func (w *wire) send(typ, version string, list ...res) string {
	w.nonce++
	nonce := strconv.Itoa(w.nonce)
	out := make([]xdslog.Resource, len(list))
	for i, r := range list {
		v := version
		if w.mode == protocol.Delta {
			v = r.hash
		}
		out[i] = xdslog.Resource{Name: r.name, Version: v, Hash: r.hash}
	}
	w.rec.Send(1, typ, nonce, version, out, nil, 100)
	w.latest[typ] = nonce
	return nonce
}

func (w *wire) ack(typ, nonce, version string) {
	w.acked[typ] = version
	e := w.request(typ, nonce, nil)
	require.Equal(w.t, xdslog.EventAck, e.Event, "%s nonce %s", typ, nonce)
}

func (w *wire) nack(typ, nonce, detail string) {
	e := w.request(typ, nonce, &detail)
	require.Equal(w.t, xdslog.EventNack, e.Event, "%s nonce %s", typ, nonce)
}

// sendAck is a response the client ACKs.
func (w *wire) sendAck(typ, version string, list ...res) {
	w.ack(typ, w.send(typ, version, list...), version)
}

// model is xds.log's model of the stream, for client.
func (w *wire) model(client string) Model {
	st := w.rec.Status()
	require.Len(w.t, st, 1)
	return Model{Client: client, Mode: w.mode, Stream: st[0], Published: w.published, Labels: w.book.Lookup}
}

// hashes: 64-hex content hashes, as the recorder writes them.
func hash(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}
