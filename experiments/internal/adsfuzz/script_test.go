package adsfuzz

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/protobuf/proto"
)

// TestDecodeBoundsScript: however long the input, a script has at most MaxOps ops.
func TestDecodeBoundsScript(t *testing.T) {
	s := Decode(bytes.Repeat([]byte{3}, 10_000)) // 3: delta, linear; then CloseSend ops
	assert.True(t, s.Delta)
	assert.True(t, s.Linear)
	assert.Len(t, s.Ops, MaxOps)
	assert.Empty(t, Decode(nil).Ops)
}

// TestDecodeSend: a send op reads its type, names, flags, version and nonce choices.
func TestDecodeSend(t *testing.T) {
	s := Decode([]byte{0, byte(Send), 4, 2, 5, 5, 7, 1, 0, 0, 1, 0, 2})
	assert.False(t, s.Delta)
	op := s.Ops[0]
	assert.Equal(t, TypeURLs[4], op.TypeURL)
	assert.Equal(t, []string{LongName, LongName}, op.Names, "duplicates come from the same index twice")
	assert.True(t, op.ErrorDetail)
	assert.Equal(t, []string{Names[0], LongName}, op.Unsubscribe, "flag 4: the first name is also unsubscribed")
	assert.Equal(t, Empty, op.VersionFrom)
	assert.Equal(t, LastReceived, op.NonceFrom)
}

// TestSizedIsExact: the *Limit ops send exactly the size asked, in both protocols.
func TestSizedIsExact(t *testing.T) {
	for _, delta := range []bool{false, true} {
		st := &stream{delta: delta}
		for _, size := range []int{200, 127 + 64, 64 << 10, 64<<10 + 1} {
			assert.Equal(t, size, proto.Size(st.sized(TypeURLs[0], size)), "delta %v size %d", delta, size)
		}
	}
}
