package results

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The automaton must cover exactly the union of all occurrences a naive search finds.
func TestMatcherAgreesWithNaiveSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	word := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abc"[rng.IntN(3)] // tiny alphabet: many overlaps and shared prefixes
		}
		return b
	}
	for round := 0; round < 300; round++ {
		var pats []pattern
		for i := 0; i < 1+rng.IntN(6); i++ {
			pats = append(pats, pattern{text: word(1 + rng.IntN(5)), repl: "#"})
		}
		m := newMatcher(pats)
		text := word(rng.IntN(60))
		want := make([]bool, len(text))
		for _, p := range m.pats {
			for i := 0; i+len(p.text) <= len(text); i++ {
				if bytes.Equal(text[i:i+len(p.text)], p.text) {
					for j := i; j < i+len(p.text); j++ {
						want[j] = true
					}
				}
			}
		}
		got := make([]bool, len(text))
		prevEnd := -1
		for _, sp := range m.scan(text) {
			require.Greater(t, sp.start, prevEnd-1, "spans sorted and disjoint")
			prevEnd = sp.end
			for j := sp.start; j < sp.end; j++ {
				got[j] = true
			}
		}
		assert.Equal(t, want, got, "round %d text %q pats %v", round, text, m.pats)
	}
}

func TestMatcherEmpty(t *testing.T) {
	m := newMatcher([]pattern{{text: nil}, {text: []byte{}}})
	assert.True(t, m.empty())
	assert.Nil(t, m.scan([]byte("anything")))
	assert.False(t, m.any([]byte("anything")))
}
