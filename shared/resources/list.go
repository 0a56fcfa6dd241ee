package resources

import (
	"fmt"
	"iter"
	"slices"
)

// chunkSize is how many resources a List chunk holds. An edit copies one chunk (64
// headers of 64 bytes: 4 kB) and the list's chunk pointers (N/64 of them: 1.25 kB at
// N = 10,000), instead of the N headers a flat slice would copy (640 kB at 10,000).
const chunkSize = 64

// List is one type's resources in a Set, in order: a persistent list. A published set
// never changes and the set it was rebuilt from stays readable (the runner and the
// reverting publisher read earlier sets), so an edit cannot write in place; a List is
// a slice of pointers to fixed-size chunks shared between the lists that hold them, and
// an edit copies only the chunk it touches and the chunk pointers. Every chunk but the
// last is full; a chunk is never written once a List holds it, and a slot past Len is
// zero (a truncated list's last chunk is a copy).
//
// The zero List is empty. A List is a small value: copying it shares its chunks.
type List struct {
	chunks []*chunk
	n      int
}

// chunk is chunkSize consecutive resources of a List.
type chunk [chunkSize]Resource

// ListOf makes a List of rs, in order; rs is copied.
func ListOf(rs ...Resource) List {
	return List{}.appended(rs...)
}

// Len is the number of resources in l.
func (l List) Len() int { return l.n }

// At returns resource i of l; it panics if i is out of range, as a slice index would.
func (l List) At(i int) Resource { return *l.ref(i) }

// All yields l's resources with their index, in order.
func (l List) All() iter.Seq2[int, Resource] {
	return func(yield func(int, Resource) bool) {
		for k, c := range l.chunks {
			base := k * chunkSize
			for j := range min(chunkSize, l.n-base) {
				if !yield(base+j, c[j]) {
					return
				}
			}
		}
	}
}

// Resources returns a new slice of l's resources, O(Len): for a caller that needs a
// slice (to append to, or to hand on); ranging over All copies nothing.
func (l List) Resources() []Resource {
	out := make([]Resource, 0, l.n)
	for k, c := range l.chunks {
		out = append(out, c[:min(chunkSize, l.n-k*chunkSize)]...)
	}
	return out
}

// ref points at resource i inside its chunk, which is shared: never write through it.
func (l List) ref(i int) *Resource {
	if i < 0 || i >= l.n {
		panic(fmt.Sprintf("resources: List index %d out of range [0:%d]", i, l.n))
	}
	return &l.chunks[i/chunkSize][i%chunkSize]
}

// indexed is a resource and its index in a List.
type indexed struct {
	i int
	r Resource
}

// with returns l with each resource at edits' indexes replaced; l is unchanged. It
// copies the chunk pointers once and each chunk an edit touches once, however many
// edits there are.
func (l List) with(edits ...indexed) List {
	if len(edits) == 0 {
		return l
	}
	chunks := slices.Clone(l.chunks)
	copied := map[int]bool{}
	for _, e := range edits {
		_ = l.ref(e.i) // the bounds check
		k := e.i / chunkSize
		if !copied[k] {
			c := *chunks[k]
			chunks[k], copied[k] = &c, true
		}
		chunks[k][e.i%chunkSize] = e.r
	}
	return List{chunks: chunks, n: l.n}
}

// appended returns l with rs added at the end; l is unchanged. It copies the chunk
// pointers and the last chunk, if rs adds to it, once for all of rs.
func (l List) appended(rs ...Resource) List {
	if len(rs) == 0 {
		return l
	}
	n := l.n + len(rs)
	chunks := make([]*chunk, len(l.chunks), (n+chunkSize-1)/chunkSize)
	copy(chunks, l.chunks)
	if used := l.n % chunkSize; used > 0 {
		c := *chunks[len(chunks)-1]
		m := copy(c[used:], rs)
		chunks[len(chunks)-1] = &c
		rs = rs[m:]
	}
	for len(rs) > 0 {
		c := new(chunk)
		m := copy(c[:], rs)
		chunks = append(chunks, c)
		rs = rs[m:]
	}
	return List{chunks: chunks, n: n}
}

// truncated returns the first n resources of l; l is unchanged. The full chunks kept
// are shared; a partial last one is copied, so that no slot past Len holds anything.
func (l List) truncated(n int) List {
	if n >= l.n {
		return l
	}
	if n <= 0 {
		return List{}
	}
	k := (n + chunkSize - 1) / chunkSize
	chunks := slices.Clone(l.chunks[:k])
	if rest := n % chunkSize; rest > 0 {
		c := new(chunk)
		copy(c[:], chunks[k-1][:rest])
		chunks[k-1] = c
	}
	return List{chunks: chunks, n: n}
}
