// Package adsfuzz turns fuzz bytes into a bounded script of ADS requests and runs it on
// one gRPC connection, so that the control plane's and the tap's fuzz targets drive
// hostile clients the same way (issue 26). It decodes every byte string to some script:
// the fuzzer explores scripts, never parse errors.
package adsfuzz

import (
	"strconv"
	"strings"

	rsrc "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/xds-workbench/lab/shared/resources"
)

// MaxOps bounds a script so that one exec stays fast.
const MaxOps = 32

// Kind is what one op does.
type Kind uint8

// The ops. Send* and Recv act on the script's main stream.
const (
	// Send sends one request built from the op's fields.
	Send Kind = iota
	// SendAtLimit sends a request whose encoded size is exactly the receive limit.
	SendAtLimit
	// SendOverLimit sends a request one byte over the receive limit.
	SendOverLimit
	// CloseSend half-closes the main stream.
	CloseSend
	// Cancel cancels the main stream's context.
	Cancel
	// OpenIdle opens another stream of the script's protocol that never sends; it ends
	// with the script.
	OpenIdle
	// Recv waits briefly for N responses on the main stream.
	Recv
	numKinds
)

// Nonce and version choices: the op's field, empty, or the last nonce/version received.
const (
	FromTable uint8 = iota
	Empty
	LastReceived
	numChoices
)

// Op is one step of a script.
type Op struct {
	Kind        Kind
	TypeURL     string
	Names       []string // SotW resource_names; delta resource_names_subscribe
	Unsubscribe []string // delta only
	Version     string   // SotW version_info; delta initial_resource_versions values
	VersionFrom uint8
	Nonce       string
	NonceFrom   uint8
	ErrorDetail bool
	N           int // Recv: responses to wait for
}

// Script is what one fuzz input does: which protocol and cache, then the ops.
type Script struct {
	Delta  bool
	Linear bool // serve from the LinearCache rather than the SnapshotCache
	Ops    []Op
}

// LongName is a 10,000-byte resource name.
var LongName = strings.Repeat("n", 10_000)

// TypeURLs are the type URLs an op picks from: the four the lab serves, an unknown one,
// an empty one and a malformed one.
var TypeURLs = []string{
	rsrc.ClusterType, rsrc.EndpointType, rsrc.ListenerType, rsrc.RouteType,
	"type.googleapis.com/unknown.v3.Thing", "", "not a type url",
}

// Names are the resource names an op picks from: the published ones, an unknown one,
// the empty name, the 10k name and the wildcard "*".
var Names = []string{
	resources.ClusterName, resources.ListenerName, resources.RouteName, "unknown", "", LongName, "*",
}

// Tokens are the versions and nonces an op picks from besides empty and last received.
var Tokens = []string{"1", "0", "2", "stale", "999999999999999999999", "\x00\xff"}

// reader hands out fuzz bytes, zero once they run out.
type reader struct {
	b []byte
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) done() bool { return len(r.b) == 0 }

// pick returns one element of t chosen by the next byte.
func pick[T any](r *reader, t []T) T { return t[int(r.byte())%len(t)] }

// names picks up to 3 names; duplicates come from picking the same index twice.
func (r *reader) names() []string {
	n := int(r.byte() % 4)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = pick(r, Names)
	}
	return out
}

// Decode turns fuzz bytes into a script. The first byte picks protocol and cache; each
// op then takes a kind byte and, for a send, a few more.
func Decode(data []byte) Script {
	r := &reader{b: data}
	head := r.byte()
	s := Script{Delta: head&1 == 1, Linear: head&2 == 2}
	for !r.done() && len(s.Ops) < MaxOps {
		s.Ops = append(s.Ops, r.op())
	}
	return s
}

func (r *reader) op() Op {
	op := Op{Kind: Kind(r.byte() % byte(numKinds))}
	switch op.Kind {
	case Send:
		op.TypeURL = pick(r, TypeURLs)
		op.Names = r.names()
		flags := r.byte()
		op.ErrorDetail = flags&1 == 1
		if flags&2 == 2 {
			op.Unsubscribe = r.names()
			if flags&4 == 4 && len(op.Names) > 0 {
				op.Unsubscribe = append(op.Unsubscribe, op.Names[0]) // same name both ways
			}
		}
		op.Version, op.VersionFrom = pick(r, Tokens), r.byte()%numChoices
		op.Nonce, op.NonceFrom = pick(r, Tokens), r.byte()%numChoices
	case SendAtLimit, SendOverLimit:
		op.TypeURL = pick(r, TypeURLs)
	case Recv:
		op.N = 1 + int(r.byte()%3)
	}
	return op
}

// String describes a script for a failure message.
func (s Script) String() string {
	var b strings.Builder
	b.WriteString("delta=" + strconv.FormatBool(s.Delta) + " linear=" + strconv.FormatBool(s.Linear))
	for _, op := range s.Ops {
		b.WriteString(" op" + strconv.Itoa(int(op.Kind)) + "(" + op.TypeURL + ")")
	}
	return b.String()
}

// Seeds are one script per op kind (see Decode for the byte layout), on the SotW
// snapshot-cache head byte 0: fuzz targets add them and their variants; the committed
// corpora under testdata/fuzz add scripts that mix them.
var Seeds = [][]byte{
	{0, 0, 0, 1, 0, 0, 2, 6, 1},       // CDS for inventory, then read
	{0, 0, 0, 3, 5, 1, 0, 0, 0},       // 3 names, one 10k long, error_detail on the first request
	{0, 0, 4, 2, 3, 3, 2, 0, 2, 6, 2}, // unknown type, names with duplicates
	{0, 1, 0},                         // exactly at the receive limit
	{0, 2, 0},                         // one byte over the receive limit
	{0, 0, 0, 0, 0, 0, 0, 3},          // wildcard CDS then half-close
	{0, 0, 0, 0, 0, 0, 0, 4},          // wildcard CDS then cancel
	{0, 5, 5, 5},                      // streams that open and never send
	{0, 0, 0, 0, 0, 0, 0, 6, 2, 0, 0, 0, 0, 2, 0, 2, 6, 2, 0, 0, 0, 0, 2, 0, 2}, // ACK with the last nonce, then again
	{0, 0, 5, 1, 4, 7, 0, 0, 0}, // empty type URL and empty name, error detail
}
