package redact

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"sort"
	"sync"
)

// pattern is one byte string to find: a secret value in one encoding, or a registered
// request reason body.
type pattern struct {
	text []byte
	hint bool   // not redacted: only reported by scanHint (see Redactor.Bytes)
	repl string // what replaces it
	kind string // for leak reports: "<NAME> (<encoding>)"; never the value
	// rank decides which label two patterns with the same text keep, whatever order they were
	// added in: the lowest (secrets by name, then reasons).
	rank string
}

// dfa finds all patterns of a small, fixed set at once with an Aho-Corasick automaton compiled
// to a dense DFA over byte classes: one table lookup per input byte. Its size is states ×
// classes, so it serves the short patterns and the key-word hints only (see matcher); long
// patterns, which grow with every secret and reason a run adds, are in matcher's gram index.
type dfa struct {
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

// newDFA compiles the patterns. Empty patterns are dropped (an empty secret must not
// match everywhere); duplicates keep the first occurrence, so callers order them by priority.
func newDFA(pats []pattern) *dfa {
	m := &dfa{}
	m.addPatterns(pats)
	m.newState() // root
	m.buildTrie()
	m.linkFailures()
	m.buildFast()
	return m
}

// addPatterns keeps each distinct non-empty pattern once and numbers the bytes they use
// (class 0: every byte no pattern uses).
func (m *dfa) addPatterns(pats []pattern) {
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
}

// newState adds a state with no edges and no output, and returns it.
func (m *dfa) newState() int32 {
	for i := int32(0); i < m.ncls; i++ {
		m.delta = append(m.delta, -1)
	}
	m.outLen = append(m.outLen, 0)
	m.outPat = append(m.outPat, -1)
	m.hint = append(m.hint, false)
	return int32(len(m.outLen) - 1)
}

// buildTrie adds each pattern's path from the root; its last state outputs the longest
// pattern ending there, or marks a hint.
func (m *dfa) buildTrie() {
	n := m.ncls
	for pi, p := range m.pats {
		s := int32(0)
		for _, b := range p.text {
			c := m.cls[b]
			if m.delta[s*n+c] < 0 {
				t := m.newState()
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
}

// linkFailures walks the trie breadth-first: fail links, outputs inherited along them,
// missing edges filled in.
func (m *dfa) linkFailures() {
	n := m.ncls
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
}

// buildFast is the transition table the scan reads: the next state's row offset, negative
// (minus one) where that state has an output or a hint.
func (m *dfa) buildFast() {
	n := m.ncls
	m.fast = make([]int32, len(m.delta))
	for i, t := range m.delta {
		if m.outLen[t] != 0 || m.hint[t] {
			m.fast[i] = -(t * n) - 1
		} else {
			m.fast[i] = t * n
		}
	}
}

// any reports whether some pattern occurs in data.
func (m *dfa) any(data []byte) bool {
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

func (m *dfa) empty() bool { return m == nil || len(m.pats) == 0 }

// occurrences calls emit with every occurrence [start,end) of the longest pattern ending at
// each position of data, and reports whether a hint pattern occurs (hints never make spans).
func (m *dfa) occurrences(data []byte, emit func(start, end int, p *pattern)) (hint bool) {
	if m.empty() {
		return false
	}
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
		emit(i+1-int(m.outLen[st]), i+1, &m.pats[m.outPat[st]])
	}
	return hint
}

// gramLen is the length of the grams that index long patterns: one unaligned 64-bit load per
// input position reads a whole gram.
const gramLen = 8

// matcher finds every pattern of a growing set: the secrets and reasons a run registers as it
// goes (hundreds of secrets, each in ~20 encodings). Adding a pattern costs the pattern's own
// length, never a rebuild of what was added before — which is what made the first matcher, one
// DFA over everything, quadratic over a run.
//
// A pattern of at least gramLen bytes is indexed by one of its 8-byte grams (the one with the
// fewest patterns so far); the scan reads the gram at every input position, tests a bit filter
// of gram hashes, and only on a hit looks the gram up and compares the candidates in full. The
// few shorter patterns and the key-word hints are in a small DFA, rebuilt when a short pattern
// is added. Scans take a read lock for the scan alone; an add holds the write lock for the
// insertion of its own patterns.
type matcher struct {
	mu     sync.RWMutex
	pats   []*pattern
	byText map[string]int32 // pattern text -> index in pats
	grams  map[uint64][]gramRef
	filter []uint64 // bit set over gramHash, 1<<filterBits bits
	fbits  uint
	ngrams int
	short  []int32  // indexes of the patterns shorter than gramLen
	maxLen int      // the longest pattern's length (splitOccurrences' window)
	cross  crossSet // what a pattern looks like around each place a break could split it
	hints  bool     // the key-word hints are part of the short DFA
	dfa    *dfa     // over the short patterns (and hints); nil when there are none
}

// gramRef is a long pattern indexed under a gram that starts off bytes into it.
type gramRef struct {
	pat int32
	off int32
}

// span is a merged region to redact: [start, end), labelled by its longest pattern.
type span struct {
	start, end int
	p          *pattern
	split      bool // a line break splits it: the replacement keeps the breaks (lineBreaks)
}

// newMatcher indexes the patterns. Empty patterns are dropped (an empty secret must not match
// everywhere); of two with the same text the lower rank is kept (add order when equal).
func newMatcher(pats []pattern) *matcher {
	m := &matcher{}
	m.add(pats)
	return m
}

// withHints makes the matcher report the key-word hints (hintPatterns) in scanHint.
func (m *matcher) withHints() *matcher {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hints = true
	m.rebuildShort()
	return m
}

// add indexes pats; see newMatcher for duplicates.
func (m *matcher) add(pats []pattern) {
	if len(pats) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byText == nil {
		m.byText, m.grams = map[string]int32{}, map[uint64][]gramRef{}
	}
	shortAdded := false
	for _, p := range pats {
		if len(p.text) == 0 || p.hint {
			continue
		}
		p := p
		if i, ok := m.byText[string(p.text)]; ok {
			if p.rank < m.pats[i].rank {
				m.pats[i] = &p // a new pointer: scans under way keep the one they read
				shortAdded = shortAdded || len(p.text) < gramLen
			}
			continue
		}
		idx := int32(len(m.pats))
		m.pats = append(m.pats, &p)
		m.maxLen = max(m.maxLen, len(p.text))
		m.cross.add(m.pats, p.text)
		m.byText[string(p.text)] = idx
		if len(p.text) < gramLen {
			m.short = append(m.short, idx)
			shortAdded = true
			continue
		}
		m.indexGram(idx, &p)
	}
	if shortAdded {
		m.rebuildShort()
	}
}

// indexGram files the long pattern under its least crowded gram (the last such on ties: the
// end of a token or a reason tends to be its most distinctive part).
func (m *matcher) indexGram(idx int32, p *pattern) {
	best, bestN := 0, -1
	for off := 0; off+gramLen <= len(p.text); off++ {
		n := len(m.grams[binary.LittleEndian.Uint64(p.text[off:])])
		if bestN < 0 || n <= bestN {
			best, bestN = off, n
			if n == 0 && off+gramLen == len(p.text) {
				break
			}
		}
	}
	g := binary.LittleEndian.Uint64(p.text[best:])
	m.grams[g] = append(m.grams[g], gramRef{pat: idx, off: int32(best)})
	m.ngrams++
	if m.ngrams*16 > 1<<m.fbits {
		m.resizeFilter() // keep the filter at most 1/16 full so that misses stay cheap
		return
	}
	m.setFilter(g)
}

func (m *matcher) resizeFilter() {
	m.fbits = 12
	for m.ngrams*16 > 1<<m.fbits {
		m.fbits++
	}
	m.filter = make([]uint64, (1<<m.fbits)/64)
	for g := range m.grams {
		m.setFilter(g)
	}
}

func (m *matcher) setFilter(g uint64) {
	h := gramHash(g, m.fbits)
	m.filter[h>>6] |= 1 << (h & 63)
}

// gramHash is the gram's bit in the filter (Fibonacci hashing: the top fbits bits).
func gramHash(g uint64, fbits uint) uint64 { return (g * 0x9E3779B97F4A7C15) >> (64 - fbits) }

// rebuildShort compiles the DFA of the short patterns (and hints); callers hold m.mu.
func (m *matcher) rebuildShort() {
	var pats []pattern
	for _, i := range m.short {
		pats = append(pats, *m.pats[i])
	}
	if m.hints {
		// Hints last: a hint identical to a short secret is dropped as a duplicate, so the
		// secret is still redacted (and the hint is then not needed: the value is gone).
		pats = append(pats, hintPatterns...)
	}
	m.dfa = nil
	if len(pats) > 0 {
		m.dfa = newDFA(pats)
	}
}

func (m *matcher) empty() bool {
	if m == nil {
		return true
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.pats) == 0
}

// patterns returns the redactable patterns (not the hints), in the order they were added.
func (m *matcher) patterns() []*pattern {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Clone(m.pats)
}

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
// hint reports whether a hint pattern occurs (withHints).
func (m *matcher) scanHint(data []byte) (out []span, hint bool) {
	if m == nil || len(data) == 0 {
		return nil, false
	}
	var occ []span
	emit := func(start, end int, p *pattern) { occ = append(occ, span{start: start, end: end, p: p}) }
	m.mu.RLock()
	hint = m.dfa.occurrences(data, emit)
	if m.ngrams > 0 {
		m.gramOccurrences(data, emit)
	}
	m.splitOccurrences(data, func(start, end int, p *pattern) {
		occ = append(occ, span{start: start, end: end, p: p, split: true})
	})
	m.mu.RUnlock()
	if len(occ) == 0 {
		return nil, hint
	}
	// In order of end, the longest first: the merge below then keeps the longest label.
	slices.SortFunc(occ, func(a, b span) int {
		if a.end != b.end {
			return a.end - b.end
		}
		return b.start - a.start
	})
	holes := placeholders(data)
	for _, sp := range occ {
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
			if len(last.p.text) > len(sp.p.text) {
				sp.p = last.p
			}
			if last.end > sp.end {
				sp.end = last.end
			}
			sp.split = sp.split || last.split
		}
		out = append(out, sp)
	}
	return out, hint
}

// splitOccurrences finds the occurrences a line break splits (a token printed across two
// lines of a log, "half1\nhalf2"): the text is joined with every line break removed — CR,
// LF, and their JSON escapes \r and \n, as a stored tail holds them — and each occurrence
// that spanned a removed break is emitted at its place in data. Only the neighbourhood of a
// cut whose two bytes either side some pattern has at one of its inner positions is scanned
// (crossSet): most line ends of a log are not the middle of a secret, and scanning around all
// of them scanned the text twice. Callers hold m.mu for reading.
func (m *matcher) splitOccurrences(data []byte, emit func(start, end int, p *pattern)) {
	if m.maxLen < 2 || bytes.IndexAny(data, "\r\n") < 0 && !bytes.Contains(data, []byte(`\n`)) && !bytes.Contains(data, []byte(`\r`)) {
		return
	}
	joined, cuts := joinLines(data)
	if len(cuts) == 0 {
		return
	}
	// orig maps joined[j] to its index in data.
	orig := func(j int) int {
		k := sort.Search(len(cuts), func(k int) bool { return cuts[k].at > j })
		if k == 0 {
			return j
		}
		return j + cuts[k-1].shift
	}
	// An occurrence across the cut at joined[at] lies within at-maxLen+1 … at+maxLen-1: only
	// those windows of the cuts that may be crossed are scanned (merged where they overlap).
	L := m.maxLen
	for w := 0; w < len(cuts); {
		if !m.cross.mayCross(joined, cuts[w].at) {
			w++
			continue
		}
		lo, hi := max(0, cuts[w].at-L+1), min(len(joined), cuts[w].at+L-1)
		for w++; w < len(cuts) && cuts[w].at-L+1 <= hi; w++ {
			if m.cross.mayCross(joined, cuts[w].at) {
				hi = min(len(joined), cuts[w].at+L-1)
			}
		}
		split := func(start, end int, p *pattern) {
			start, end = start+lo, end+lo
			s, e := orig(start), orig(end-1)+1
			if e-s != end-start { // a break was removed inside: data alone does not hold it whole
				emit(s, e, p)
			}
		}
		m.dfa.occurrences(joined[lo:hi], split)
		if m.ngrams > 0 {
			m.gramOccurrences(joined[lo:hi], split)
		}
	}
}

// lineCut is a place in the joined text: bytes were removed just before joined[at]; shift is
// the total removed up to and including them.
type lineCut struct{ at, shift int }

// joinLines is data without its line breaks (breakLen), copied a line at a time, and where
// they were.
func joinLines(data []byte) ([]byte, []lineCut) {
	var cuts []lineCut
	joined := make([]byte, 0, len(data))
	for i := 0; i < len(data); {
		j := bytes.IndexAny(data[i:], "\r\n\\")
		if j < 0 {
			joined = append(joined, data[i:]...)
			break
		}
		joined = append(joined, data[i:i+j]...)
		i += j
		n := breakLen(data, i)
		if n == 0 { // a backslash that escapes something else
			joined = append(joined, data[i])
			i++
			continue
		}
		shift := n
		if len(cuts) > 0 {
			shift += cuts[len(cuts)-1].shift
		}
		if len(cuts) > 0 && cuts[len(cuts)-1].at == len(joined) {
			cuts[len(cuts)-1].shift = shift // consecutive breaks (CR LF, blank lines): one cut
		} else {
			cuts = append(cuts, lineCut{at: len(joined), shift: shift})
		}
		i += n
	}
	return joined, cuts
}

// crossSet answers, with no false negative, whether some pattern could cross a cut: for
// every pattern and every inner position k it holds the (up to) two bytes before k and two
// from k, tagged with how many of each the pattern has there; a cut is looked up with the
// joined text's bytes around it in the same four shapes. A bit set over a hash, kept at most
// 1/16 full (grown and refilled from the patterns as they are added).
type crossSet struct {
	bits []uint64
	keys int
}

func crossKey(before, after []byte) uint64 {
	k := uint64(len(before))<<4 | uint64(len(after))
	for _, c := range before {
		k = k<<8 | uint64(c)
	}
	for _, c := range after {
		k = k<<8 | uint64(c)
	}
	k *= 0x9E3779B97F4A7C15 // Fibonacci hashing: the high bits depend on every byte
	return k
}

func (c *crossSet) set(k uint64) {
	h := k >> (64 - bits.Len(uint(len(c.bits)*64-1)))
	c.bits[h>>6] |= 1 << (h & 63)
}

func (c *crossSet) has(k uint64) bool {
	h := k >> (64 - bits.Len(uint(len(c.bits)*64-1)))
	return c.bits[h>>6]&(1<<(h&63)) != 0
}

// add files text's inner positions; all are every pattern so far (text included), from which
// the set is refilled when it grows.
func (c *crossSet) add(all []*pattern, text []byte) {
	if len(text) < 2 {
		return
	}
	c.keys += len(text) - 1
	if c.bits == nil || c.keys*16 > len(c.bits)*64 {
		n := 1 << 12
		for c.keys*16 > n {
			n <<= 1
		}
		c.bits = make([]uint64, n/64)
		for _, p := range all {
			c.fill(p.text)
		}
		return
	}
	c.fill(text)
}

func (c *crossSet) fill(text []byte) {
	for k := 1; k < len(text); k++ {
		c.set(crossKey(text[max(0, k-2):k], text[k:min(len(text), k+2)]))
	}
}

// mayCross reports whether some pattern may cross the cut before joined[at]: the bytes around
// it match one of the four shapes a pattern's inner position can have.
func (c *crossSet) mayCross(joined []byte, at int) bool {
	if c.bits == nil || at == 0 || at >= len(joined) {
		return false
	}
	for nb := 1; nb <= 2 && nb <= at; nb++ {
		for na := 1; na <= 2 && at+na <= len(joined); na++ {
			if c.has(crossKey(joined[at-nb:at], joined[at:at+na])) {
				return true
			}
		}
	}
	return false
}

// breakLen is the length of the line break at data[i]: 1 for CR or LF, 2 for a JSON escape
// \r or \n, 0 for anything else.
func breakLen(data []byte, i int) int {
	switch {
	case data[i] == '\n' || data[i] == '\r':
		return 1
	case data[i] == '\\' && i+1 < len(data) && (data[i+1] == 'n' || data[i+1] == 'r'):
		return 2
	}
	return 0
}

// lineBreaks returns the line breaks in b, in order (what a split secret's replacement keeps).
func lineBreaks(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); {
		if n := breakLen(b, i); n > 0 {
			out = append(out, b[i:i+n]...)
			i += n
			continue
		}
		i++
	}
	return out
}

// gramOccurrences finds the long patterns; callers hold m.mu for reading.
func (m *matcher) gramOccurrences(data []byte, emit func(start, end int, p *pattern)) {
	filter, fbits := m.filter, m.fbits
	for i := 0; i+gramLen <= len(data); i++ {
		g := binary.LittleEndian.Uint64(data[i:])
		h := gramHash(g, fbits)
		if filter[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		for _, ref := range m.grams[g] {
			p := m.pats[ref.pat]
			start := i - int(ref.off)
			end := start + len(p.text)
			if start >= 0 && end <= len(data) && bytes.Equal(data[start:end], p.text) {
				emit(start, end, p)
			}
		}
	}
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
		b.WriteString(sp.p.repl)
		if sp.split {
			b.Write(lineBreaks(data[sp.start:sp.end])) // the text keeps its lines
		}
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
