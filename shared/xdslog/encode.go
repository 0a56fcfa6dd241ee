package xdslog

import (
	"encoding/json"
	"slices"
	"strconv"
)

// Resources is a resource list as it appears in publish and send events. It encodes
// itself: a SotW send or a publish at N = 10,000 lists 10,000-20,000 resources, and
// reflection-based encoding of those lists was most of the recorder's cost.
type Resources []Resource

// Shared targets for the redundant flag, so marking a resource allocates nothing.
var (
	redundantTrue  = true
	redundantFalse = false
)

// MarshalJSON writes the same JSON encoding/json would.
func (rs Resources) MarshalJSON() ([]byte, error) {
	if rs == nil {
		return []byte("null"), nil
	}
	return rs.appendJSON(make([]byte, 0, len(rs)*112)), nil
}

// appendJSON appends the list's JSON encoding to b. The recorder splices it into the
// event line directly: encoding/json re-validates a Marshaler's output, which would cost
// more than the reflection saved.
func (rs Resources) appendJSON(b []byte) []byte {
	b = slices.Grow(b, rs.encodedSize())
	b = append(b, '[')
	for i, r := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		if r.Type != "" {
			b = append(b, `"type":`...)
			b = appendString(b, r.Type)
			b = append(b, ',')
		}
		b = append(b, `"name":`...)
		b = appendString(b, r.Name)
		if r.Version != "" {
			b = append(b, `,"version":`...)
			b = appendString(b, r.Version)
		}
		b = append(b, `,"hash":`...)
		b = appendString(b, r.Hash)
		if r.Redundant != nil {
			b = append(b, `,"redundant":`...)
			b = strconv.AppendBool(b, *r.Redundant)
		}
		if r.NotFound {
			b = append(b, `,"not_found":true`...)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// encodedSize is an upper bound of the plain-ASCII encoding's length, so the buffer
// grows once instead of being copied log2(size) times.
func (rs Resources) encodedSize() int {
	n := 2
	for _, r := range rs {
		n += len(r.Type) + len(r.Name) + len(r.Version) + len(r.Hash) + 64
	}
	return n
}

// appendString appends s as a JSON string. Names, versions and hashes are plain ASCII in
// practice; anything else goes through encoding/json so escaping stays exactly right.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, err := json.Marshal(s)
			if err != nil {
				return append(b, `""`...)
			}
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
