package syncbuf

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var _ io.Writer = (*Buffer)(nil)

func TestZeroValueIsEmpty(t *testing.T) {
	var b Buffer
	assert.Empty(t, b.String())
	assert.Empty(t, b.Bytes())
}

// TestConcurrentWritesAndReads is meant for -race: writers and a reader at once, and
// every line arrives whole.
func TestConcurrentWritesAndReads(t *testing.T) {
	var b Buffer
	const writers, lines = 4, 100
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				_, err := fmt.Fprintf(&b, "w%d-%d\n", w, i)
				assert.NoError(t, err)
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range lines {
			_ = b.String()
			_ = b.Bytes()
		}
	}()
	wg.Wait()
	<-done
	got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Len(t, got, writers*lines)
	assert.Contains(t, got, "w3-99")
}

// TestBytesIsACopy checks that a snapshot does not change under later writes.
func TestBytesIsACopy(t *testing.T) {
	var b Buffer
	_, _ = b.Write([]byte("first"))
	snap := b.Bytes()
	_, _ = b.Write([]byte(" second"))
	snap[0] = 'F'
	assert.Equal(t, "first", string(b.Bytes()[:5]))
	assert.Equal(t, "First", string(snap))
	assert.Equal(t, "first second", b.String())
}

func TestTakeReturnsOnlyWhatIsNew(t *testing.T) {
	var b Buffer
	_, _ = b.Write([]byte("one\n"))
	assert.Equal(t, "one\n", b.Take())
	assert.Empty(t, b.Take(), "taken once")
	_, _ = b.Write([]byte("two\n"))
	assert.Equal(t, "two\n", b.String())
	assert.Equal(t, "two\n", b.Take())
}
