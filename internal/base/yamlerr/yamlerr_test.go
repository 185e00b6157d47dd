package yamlerr

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// Parser and scanner errors both name the 1-based line where the construct with the error
// starts; type errors name their own line; the message is one line.
func TestLine(t *testing.T) {
	cases := []struct {
		text string
		line int
		msg  string
	}{
		{"a: 1\nb:\n  - {x: 1\n", 3, "did not find expected ',' or '}'"},          // parser error
		{"a: 1\nb: [1, 2\n", 2, "did not find expected ',' or ']'"},               // parser error
		{"a: 1\n\tb: 2\n", 2, "found a tab character that violates indentation"},  // scanner error
		{"a: 1\nb: 'x\n", 2, "found unexpected end of stream"},                    // scanner error
		{"a: 1\na: 2\n", 2, `mapping key "a" already defined at line 1`},          // decode error
		{"a: [1]\n", 1, "cannot unmarshal !!seq into string"},                     // type error
		{"a: [1]\nb: {}\n", 1, "cannot unmarshal !!seq into string (and 1 more)"}, // several
	}
	for _, c := range cases {
		var v struct{ A, B string }
		err := yaml.Unmarshal([]byte(c.text), &v)
		if err == nil {
			t.Fatalf("%q: no error", c.text)
		}
		line, msg := Line(err)
		if line != c.line || msg != c.msg {
			t.Errorf("%q: got (%d, %q), want (%d, %q) from %q", c.text, line, msg, c.line, c.msg, err)
		}
	}
}

// OneMapping takes exactly one document holding a mapping and names what else it found.
func TestOneMapping(t *testing.T) {
	w := Wording{Empty: "empty", Syntax: "syntax: %s", SecondDocument: "second", NotMapping: "not a mapping"}
	cases := []struct {
		text, problem string
		line          int
	}{
		{"a: 1\nb: 2\n", "", 0},
		{"", "empty", 0},
		{"a: 1\n---\nb: 2\n", "second", 2},
		{"- a\n- b\n", "not a mapping", 1},
		{"a: 1\nb: [1\n2\n", "syntax: did not find expected ',' or ']'", 2},
		// Issue 42 (found by fuzzing the gate definitions): a problem at the end of the input
		// was put on the line after the last.
		{"a: [1\n", "syntax: did not find expected ',' or ']' (at the end of the file)", 1},
		{"[", "syntax: did not find expected node content (at the end of the file)", 1},
		{"a: 1\nb: [\n\n", "syntax: did not find expected node content (at the end of the file)", 3},
		{"a: 'x\n", "syntax: found unexpected end of stream (at the end of the file)", 1},
	}
	for _, c := range cases {
		doc, line, problem := OneMapping([]byte(c.text), w)
		if problem != c.problem || line != c.line {
			t.Errorf("%q: got line %d %q, want line %d %q", c.text, line, problem, c.line, c.problem)
		}
		if c.problem == "" && (doc == nil || doc.Content[0].Kind != yaml.MappingNode) {
			t.Errorf("%q: no mapping returned", c.text)
		}
	}
}

func TestLastLine(t *testing.T) {
	for text, want := range map[string]int{"": 1, "a": 1, "a\n": 1, "a\nb": 2, "a\r\nb\r\n": 2, "\r0": 2, "a\rb\r": 2, "a\u2028b": 2, "a\u0085b\u2029c": 3, "\n\n": 2} {
		assert.Equal(t, want, LastLine([]byte(text)), "%q", text)
	}
	// yaml.v3 counts a lone CR as a line break: "\r0" is refused on its line 2, which exists.
	_, line, _ := OneMapping([]byte("a: 1\r0: [\r"), Wording{Syntax: "%s"})
	assert.Equal(t, 2, line)
}

func TestKeys(t *testing.T) {
	doc, _, problem := OneMapping([]byte("a: 1\nb: 2\na: 3\n? [x]\n: 4\n"), Wording{})
	require.Empty(t, problem)
	m := doc.Content[0]
	at := func(line int, format string, a ...any) error {
		return fmt.Errorf("%d: %s", line, fmt.Sprintf(format, a...))
	}

	err := Keys{Known: []string{"a"}, What: "key", Hint: func(k string) string { return "; hint for " + k }}.Check(m, at)
	require.EqualError(t, err, `2: unknown key "b" (known: a); hint for b`)
	err = Keys{Known: []string{"a", "b"}, What: "rule key", Twice: true}.Check(m, at)
	require.EqualError(t, err, `3: rule key "a" given twice (first at line 1)`)
	err = Keys{Known: []string{"a", "b"}, What: "key"}.Check(m, at)
	require.EqualError(t, err, "4: a key must be a name", "without Twice a repeated key passes (yaml.v3's decode refuses it)")

	v, k := Value(m, "b")
	require.NotNil(t, v)
	assert.Equal(t, "2", v.Value)
	assert.Equal(t, 2, k.Line)
	v, k = Value(m, "zz")
	assert.Nil(t, v)
	assert.Nil(t, k)
	assert.Equal(t, 1, KeyLine(m, "a"), "the first of a repeated key")
	assert.Equal(t, 0, KeyLine(m, "zz"))
}
