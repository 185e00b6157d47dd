package redact

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The matcher must cover exactly the union of all occurrences a naive search finds: short
// patterns (the DFA), long ones (the gram index) and both overlapping, added in batches.
func TestMatcherAgreesWithNaiveSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	word := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abc"[rng.IntN(3)] // tiny alphabet: many overlaps and shared prefixes
		}
		return b
	}
	for round := 0; round < 600; round++ {
		maxLen := 5
		if round%2 == 1 {
			maxLen = 20 // past gramLen: the gram index, and grams shared by many patterns
		}
		m := newMatcher(nil)
		var pats []pattern
		for batch := 0; batch < 1+rng.IntN(3); batch++ {
			var add []pattern
			for i := 0; i < 1+rng.IntN(6); i++ {
				add = append(add, pattern{text: word(1 + rng.IntN(maxLen)), repl: "#"})
			}
			m.add(add)
			pats = append(pats, add...)
		}
		text := word(rng.IntN(80))
		want := make([]bool, len(text))
		for _, p := range pats {
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
		assert.Equal(t, want, got, "round %d text %q pats %v", round, text, pats)
	}
}

// Of two patterns with one text, the lower rank labels it whatever the order they came in.
func TestMatcherDuplicateKeepsLowestRank(t *testing.T) {
	a := pattern{text: []byte("value-shared-by-two"), repl: "[A]", rank: "0A"}
	b := pattern{text: []byte("value-shared-by-two"), repl: "[B]", rank: "0B"}
	for _, order := range [][]pattern{{a, b}, {b, a}} {
		m := newMatcher(nil)
		m.add(order[:1])
		m.add(order[1:])
		sp := m.scan([]byte("x value-shared-by-two y"))
		require.Len(t, sp, 1)
		assert.Equal(t, "[A]", sp[0].p.repl)
	}
}

// The filter grows with the index: thousands of long patterns are all still found.
func TestMatcherManyPatterns(t *testing.T) {
	m := newMatcher(nil)
	var text bytes.Buffer
	for i := 0; i < 5000; i++ {
		p := []byte(fmt.Sprintf("secret-%05d-tail", i))
		m.add([]pattern{{text: p, repl: "#"}})
		if i%97 == 0 {
			text.WriteString("..")
			text.Write(p)
		}
	}
	assert.Len(t, m.scan(text.Bytes()), 52)
}

func TestMatcherEmpty(t *testing.T) {
	m := newMatcher([]pattern{{text: nil}, {text: []byte{}}})
	assert.True(t, m.empty())
	assert.Nil(t, m.scan([]byte("anything")))
	d := newDFA([]pattern{{text: nil}, {text: []byte{}}})
	assert.True(t, d.empty())
	assert.False(t, d.any([]byte("anything")))
}

// The cut filter may let through a cut no pattern crosses, never the reverse: every pattern
// split at every inner position, with one or two line breaks of each kind, is found whole.
func TestSplitAtEveryPositionIsFound(t *testing.T) {
	for _, text := range []string{"ab", "abc", "Tk07x/9+aB7cD1eF3gH5iJ", "s3cr3t-value-0001"} {
		m := newMatcher([]pattern{{text: []byte(text), repl: "[R]"}})
		for k := 1; k < len(text); k++ {
			for _, br := range []string{"\n", "\r\n", `\n`, `\r\n`, "\n\n"} {
				data := []byte("x " + text[:k] + br + text[k:] + " y")
				var got []string
				m.splitOccurrences(data, func(s, e int, p *pattern) { got = append(got, string(data[s:e])) })
				assert.Equal(t, []string{text[:k] + br + text[k:]}, got, "%q split at %d by %q", text, k, br)
			}
		}
	}
}
