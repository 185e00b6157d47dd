package yamlerr

import (
	"testing"

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
		{"a: [1\n", "syntax: did not find expected ',' or ']'", 2},
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
