package results

import (
	"bytes"
	"sort"
)

// pattern is one byte string to find: a secret value in one encoding, or a registered
// request reason body.
type pattern struct {
	text []byte
	hint bool   // not redacted: only reported by scanHint (see Redactor.Bytes)
	repl string // what replaces it
	kind string // for leak reports: "<NAME> (<encoding>)"; never the value
}

// matcher finds all patterns at once with an Aho-Corasick automaton compiled to a dense DFA
// over byte classes, so the cost per input byte is one table lookup whatever the number of
// secrets and encodings (the benchmark has 10 secrets × ~15 encodings).
type matcher struct {
	pats   []pattern
	cls    [256]int32 // byte -> class; class 0 = byte in no pattern
	ncls   int32
	delta  []int32 // state*ncls + class -> next state
	outLen []int32 // longest pattern ending in this state (0: none)
	outPat []int32 // index of that pattern
	hint   []bool  // a hint pattern ends in this state
	// fast is delta for the scan loop: entries are premultiplied (next*ncls) so the loop does
	// no multiplication, and negative (-(next*ncls)-1) when next has an output, so the common
	// path is one load and one sign test per byte.
	fast []int32
}

// span is a merged region to redact: [start, end), labelled by its longest pattern.
type span struct {
	start, end int
	pat        int
}

// newMatcher compiles the patterns. Empty patterns are dropped (an empty secret must not
// match everywhere); duplicates keep the first occurrence, so callers order them by priority.
func newMatcher(pats []pattern) *matcher {
	m := &matcher{}
	seen := map[string]bool{}
	for _, p := range pats {
		if len(p.text) == 0 || seen[string(p.text)] {
			continue
		}
		seen[string(p.text)] = true
		m.pats = append(m.pats, p)
	}
	m.ncls = 1
	for _, p := range m.pats {
		for _, b := range p.text {
			if m.cls[b] == 0 {
				m.cls[b] = m.ncls
				m.ncls++
			}
		}
	}
	n := m.ncls
	newState := func() int32 {
		for i := int32(0); i < n; i++ {
			m.delta = append(m.delta, -1)
		}
		m.outLen = append(m.outLen, 0)
		m.outPat = append(m.outPat, -1)
		m.hint = append(m.hint, false)
		return int32(len(m.outLen) - 1)
	}
	newState() // root
	for pi, p := range m.pats {
		s := int32(0)
		for _, b := range p.text {
			c := m.cls[b]
			if m.delta[s*n+c] < 0 {
				t := newState()
				m.delta[s*n+c] = t
			}
			s = m.delta[s*n+c]
		}
		if p.hint {
			m.hint[s] = true
		} else if int32(len(p.text)) > m.outLen[s] {
			m.outLen[s], m.outPat[s] = int32(len(p.text)), int32(pi)
		}
	}
	// Breadth-first: fail links, outputs inherited along them, missing edges filled in.
	fail := make([]int32, len(m.outLen))
	queue := make([]int32, 0, len(m.outLen))
	for c := int32(0); c < n; c++ {
		if t := m.delta[c]; t > 0 {
			fail[t] = 0
			queue = append(queue, t)
		} else {
			m.delta[c] = 0
		}
	}
	for qi := 0; qi < len(queue); qi++ {
		s := queue[qi]
		if f := fail[s]; m.outLen[f] > m.outLen[s] {
			m.outLen[s], m.outPat[s] = m.outLen[f], m.outPat[f]
		}
		m.hint[s] = m.hint[s] || m.hint[fail[s]]
		for c := int32(0); c < n; c++ {
			t := m.delta[s*n+c]
			if t < 0 {
				m.delta[s*n+c] = m.delta[fail[s]*n+c]
				continue
			}
			fail[t] = m.delta[fail[s]*n+c]
			queue = append(queue, t)
		}
	}
	m.fast = make([]int32, len(m.delta))
	for i, t := range m.delta {
		if m.outLen[t] != 0 || m.hint[t] {
			m.fast[i] = -(t * n) - 1
		} else {
			m.fast[i] = t * n
		}
	}
	return m
}

// any reports whether some pattern occurs in data.
func (m *matcher) any(data []byte) bool {
	if m.empty() {
		return false
	}
	fast, cls := m.fast, &m.cls
	s := int32(0)
	for _, c := range data {
		s = fast[s+cls[c]]
		if s < 0 {
			return true
		}
	}
	return false
}

func (m *matcher) empty() bool { return m == nil || len(m.pats) == 0 }

func (m *matcher) scan(data []byte) []span {
	spans, _ := m.scanHint(data)
	return spans
}

// scanHint returns the merged regions covered by any pattern occurrence, in order. Overlapping
// occurrences are merged so that no part of any secret survives (a short secret overlapping a
// longer one cannot leave the longer one's tail behind); the label is the longest pattern in
// the region. Occurrences wholly inside an existing "[REDACTED:…]" placeholder are ignored, so
// redacting twice is a no-op and a placeholder is not reported as a leak.
//
// hint reports whether a hint pattern occurs (hint patterns never make spans).
func (m *matcher) scanHint(data []byte) (out []span, hint bool) {
	if m.empty() {
		return nil, false
	}
	holes := placeholders(data)
	n := m.ncls
	fast, cls := m.fast, &m.cls
	s := int32(0)
	for i, c := range data {
		s = fast[s+cls[c]]
		if s >= 0 {
			continue
		}
		s = -s - 1
		st := s / n
		if m.hint[st] {
			hint = true
		}
		if m.outLen[st] == 0 {
			continue
		}
		end := i + 1
		sp := span{start: end - int(m.outLen[st]), end: end, pat: int(m.outPat[st])}
		if inHoles(holes, sp.start, sp.end) {
			continue
		}
		// Merge with earlier regions this one overlaps (it may start before several of them).
		for len(out) > 0 && out[len(out)-1].end > sp.start {
			last := out[len(out)-1]
			out = out[:len(out)-1]
			if last.start < sp.start {
				sp.start = last.start
			}
			if len(m.pats[last.pat].text) > len(m.pats[sp.pat].text) {
				sp.pat = last.pat
			}
		}
		out = append(out, sp)
	}
	return out, hint
}

// replace writes data with every span replaced by its pattern's replacement.
func (m *matcher) replace(data []byte, spans []span) []byte {
	if len(spans) == 0 {
		return data
	}
	var b bytes.Buffer
	b.Grow(len(data))
	prev := 0
	for _, sp := range spans {
		b.Write(data[prev:sp.start])
		b.WriteString(m.pats[sp.pat].repl)
		prev = sp.end
	}
	b.Write(data[prev:])
	return b.Bytes()
}

var placeholderOpen = []byte("[REDACTED:")

// placeholders finds the "[REDACTED:…]" regions already present in data.
func placeholders(data []byte) [][2]int {
	var holes [][2]int
	off := 0
	for {
		i := bytes.Index(data[off:], placeholderOpen)
		if i < 0 {
			return holes
		}
		start := off + i
		j := bytes.IndexByte(data[start:], ']')
		if j < 0 {
			return holes
		}
		holes = append(holes, [2]int{start, start + j + 1})
		off = start + j + 1
	}
}

func inHoles(holes [][2]int, start, end int) bool {
	if len(holes) == 0 {
		return false
	}
	i := sort.Search(len(holes), func(i int) bool { return holes[i][1] >= end })
	return i < len(holes) && holes[i][0] <= start
}
