package tagexpr

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCanonicalForm(t *testing.T) {
	cases := []struct {
		in, want string
	}{
		{"@a", "@a"},
		{"  @a  ", "@a"},
		{"@a and @b", "( @a and @b )"},
		{"@a or @b", "( @a or @b )"},
		{"not @a", "not ( @a )"},
		{"not   not @a", "not ( not ( @a ) )"},
		// precedence: not > and > or
		{"@a or @b and @c", "( @a or ( @b and @c ) )"},
		{"@a and @b or @c", "( ( @a and @b ) or @c )"},
		{"not @a and @b", "( not ( @a ) and @b )"},
		{"not @a or @b", "( not ( @a ) or @b )"},
		// left associativity
		{"@a and @b and @c", "( ( @a and @b ) and @c )"},
		{"@a or @b or @c", "( ( @a or @b ) or @c )"},
		// parentheses override precedence
		{"(@a or @b) and @c", "( ( @a or @b ) and @c )"},
		{"@a and (@b or @c)", "( @a and ( @b or @c ) )"},
		{"not (@a and @b)", "not ( @a and @b )"},
		{"((((@a))))", "@a"},
		{"( @a and @b ) or ( @c and @d )", "( ( @a and @b ) or ( @c and @d ) )"},
		// Cucumber's own parsing.yml case, with "@" tags
		{"not @a or @b and not @c or not @d or @e and @f",
			"( ( ( not ( @a ) or ( @b and not ( @c ) ) ) or not ( @d ) ) or ( @e and @f ) )"},
		// tabs and newlines are whitespace; parentheses need no spaces
		{"@a\tand\n(@b)", "( @a and @b )"},
		{"(@a)and(@b)", "( @a and @b )"},
		// escapes
		{`@a\ b`, `@a\ b`},
		{`@a\(b\)`, `@a\(b\)`},
		{`@a\\b`, `@a\\b`},
		{`not @a\(\) or @b`, `( not ( @a\(\) ) or @b )`},
		// tags that look like operators are tags once prefixed with "@"
		{"@and or @not", "( @and or @not )"},
		{"@p2-16 and not @slow", "( @p2-16 and not ( @slow ) )"},
		{"@受入 and @acc-2", "( @受入 and @acc-2 )"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			e, err := Parse(c.in)
			require.NoError(t, err)
			assert.Equal(t, c.want, e.String())
			assert.False(t, e.IsEmpty())
			again, err := Parse(e.String())
			require.NoError(t, err, "canonical form must re-parse")
			assert.Equal(t, c.want, again.String())
		})
	}
}

func TestEval(t *testing.T) {
	cases := []struct {
		expr string
		tags []string
		want bool
	}{
		{"@a", []string{"@a"}, true},
		{"@a", []string{"@b"}, false},
		{"@a", nil, false},
		{"@a", []string{"@A"}, false}, // case-sensitive, as Cucumber
		{"@a", []string{"a"}, false},  // the "@" is part of the tag
		{"not @a", nil, true},
		{"@a and @b", []string{"@a"}, false},
		{"@a and @b", []string{"@b", "@a"}, true},
		{"@a or @b", []string{"@b"}, true},
		{"@a or @b", []string{"@c"}, false},
		// precedence: "@a or @b and @c" is "@a or (@b and @c)"
		{"@a or @b and @c", []string{"@a"}, true},
		{"@a or @b and @c", []string{"@b"}, false},
		// ... whereas "(@a or @b) and @c" needs @c
		{"(@a or @b) and @c", []string{"@a"}, false},
		{"(@a or @b) and @c", []string{"@a", "@c"}, true},
		// "not @a and @b" is "(not @a) and @b", not "not (@a and @b)"
		{"not @a and @b", []string{"@b"}, true},
		{"not @a and @b", nil, false},
		{"not (@a and @b)", nil, true},
		{"not (@a and @b)", []string{"@a", "@b"}, false},
		{"not not @a", []string{"@a"}, true},
		// escapes select the unescaped tag text
		{`@a\ b`, []string{"@a b"}, true},
		{`@a\ b`, []string{"@a", "b"}, false},
		{`@a\(b\)`, []string{"@a(b)"}, true},
		{`@a\\b`, []string{`@a\b`}, true},
		{"@p2-16 and not @slow", []string{"@p2-16", "@acc-2"}, true},
		{"@p2-16 and not @slow", []string{"@p2-16", "@slow"}, false},
	}
	for _, c := range cases {
		e, err := Parse(c.expr)
		require.NoError(t, err, c.expr)
		assert.Equal(t, c.want, e.Eval(c.tags), "%s on %v", c.expr, c.tags)
	}
}

func TestEmptyMatchesAll(t *testing.T) {
	for _, in := range []string{"", " ", "\t\n  "} {
		e, err := Parse(in)
		require.NoError(t, err)
		assert.True(t, e.IsEmpty())
		assert.True(t, e.Eval(nil))
		assert.True(t, e.Eval([]string{"@x"}))
		assert.Equal(t, "", e.String())
		assert.Empty(t, e.Tags())
	}
	var zero Expr
	assert.True(t, zero.IsEmpty())
	assert.True(t, zero.Eval([]string{"@x"}))
}

func TestTags(t *testing.T) {
	e := MustParse(`(@b or @a) and not @b and @a\ c`)
	assert.Equal(t, []string{"@b", "@a", "@a c"}, e.Tags())
}

func TestSyntaxErrors(t *testing.T) {
	cases := []struct {
		name, in string
		pos      int
		msg      string // substring of Msg
	}{
		{"unbalanced close", "(@a or @b))", 11, `unbalanced ")"`},
		{"unbalanced close at start", ") @a", 1, `unbalanced ")"`},
		{"unbalanced close after tag", "@a and @b )", 11, `unbalanced ")"`},
		{"unbalanced open", "(@a or @b", 1, `unbalanced "("`},
		{"unbalanced open nested", "@x and ((@a) or @b", 8, `unbalanced "("`},
		{"lone open", "(", 1, `unbalanced "("`},
		{"empty parentheses", "@a and ()", 8, "empty parentheses"},
		{"trailing and", "@a and", 4, `"and" has no operand after it`},
		{"trailing or", "@a or ", 4, `"or" has no operand after it`},
		{"trailing not", "@a and not", 8, `"not" has no operand after it`},
		{"lone not", "not", 1, `"not" has no operand after it`},
		{"operator before close", "(@a and) or @b", 5, `"and" has no operand after it`},
		{"two operators", "@a and or @b", 4, `"and" has no operand after it`},
		{"leading and", "and @a", 1, `"and" has no operand before it`},
		{"leading or", "  or @a", 3, `"or" has no operand before it`},
		{"leading operator in parens", "@a and (or @b)", 9, `"or" has no operand before it`},
		{"two operands", "@a @b", 4, `missing "and" or "or" before "@b"`},
		{"operand then paren", "@a (@b)", 4, `missing "and" or "or" before "("`},
		{"operand then not", "@a not @b", 4, `missing "and" or "or" before "not"`},
		{"two operands in parens", "(@a @b)", 5, `missing "and" or "or" before "@b"`},
		{"bare word", "@a and slow", 8, `"slow" is not a tag (tags start with "@")`},
		{"bare word first", "p2-16", 1, `"p2-16" is not a tag`},
		{"uppercase operator", "@a AND @b", 4, "operators are lowercase"},
		{"escaped operator is a bare word", `\(x`, 1, `"(x" is not a tag`},
		{"at without name", "@a or @", 7, `"@" without a tag name`},
		{"dangling backslash", `@a or @b\`, 9, `dangling "\"`},
		{"illegal escape", `@a\b`, 3, `illegal escape "\b"`},
		{"escaped at", `\@a`, 1, `illegal escape "\@"`},
		// columns count characters, not bytes
		{"column after multibyte", "@受入 @b", 5, `missing "and" or "or" before "@b"`},
		// the leftmost problem wins
		{"first error reported", "@a and ) @b\\", 4, `"and" has no operand after it`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.in)
			require.Error(t, err)
			var se *SyntaxError
			require.True(t, errors.As(err, &se), "error must be *SyntaxError, got %T", err)
			assert.Equal(t, c.pos, se.Pos, "column; msg=%s", se.Msg)
			assert.Contains(t, se.Msg, c.msg)
			assert.Equal(t, c.in, se.Input)
			assert.True(t, strings.HasPrefix(err.Error(), "tag expression: "), err.Error())
			assert.True(t, strings.HasSuffix(err.Error(), " at column "+strconv.Itoa(c.pos)), err.Error())
		})
	}
}

func TestErrorFormatAndDetail(t *testing.T) {
	_, err := Parse("(@a or @b))")
	require.EqualError(t, err, `tag expression: unbalanced ")" at column 11`)
	var se *SyntaxError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "(@a or @b))\n          ^", se.Detail())

	_, err = Parse("@a\tand")
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "@a\tand\n  \t^", se.Detail(), "tabs are kept so the caret lines up")
}

func TestMustParsePanicsOnError(t *testing.T) {
	assert.Panics(t, func() { MustParse("@a and") })
	assert.NotPanics(t, func() { MustParse("@a and @b") })
}

// FuzzParse checks that Parse never panics, that every error is a
// *SyntaxError pointing inside the input (or just past its end), and that the
// canonical form of every accepted expression re-parses to itself and selects
// the same tag sets. Its seed corpus is also in testdata/fuzz/FuzzParse (run by
// plain `go test`); run it with
//
//	go test -run '^$' -fuzz FuzzParse -fuzztime 2m ./runner/tagexpr
func FuzzParse(f *testing.F) {
	seeds := []string{
		"", "@a", "not @a", "@a and @b or @c", "(@a or @b) and not @c",
		`@a\ b`, `@a\(b\)`, `\\`, `@a\`, "((", "))", "@a @b", "and", "@",
		"not not not @x", "@受入 or @b", "(@a)and(@b)", "\xff@a",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		e, err := Parse(in)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q): error %T is not *SyntaxError", in, err)
			}
			if se.Pos < 1 || se.Pos > utf8.RuneCountInString(in)+1 {
				t.Fatalf("Parse(%q): column %d outside 1..%d", in, se.Pos, utf8.RuneCountInString(in)+1)
			}
			if !strings.HasSuffix(se.Detail(), "^") {
				t.Fatalf("Parse(%q): Detail has no caret: %q", in, se.Detail())
			}
			return
		}
		canon := e.String()
		again, err := Parse(canon)
		if err != nil {
			t.Fatalf("Parse(%q) ok but its String %q does not re-parse: %v", in, canon, err)
		}
		if again.String() != canon {
			t.Fatalf("String not stable: %q -> %q -> %q", in, canon, again.String())
		}
		// Same selection on every subset of the mentioned tags (bounded).
		tags := e.Tags()
		if len(tags) > 8 {
			tags = tags[:8]
		}
		for mask := 0; mask < 1<<len(tags); mask++ {
			var set []string
			for i, tg := range tags {
				if mask&(1<<i) != 0 {
					set = append(set, tg)
				}
			}
			if e.Eval(set) != again.Eval(set) {
				t.Fatalf("%q and its canonical form %q disagree on %v", in, canon, set)
			}
		}
	})
}

func BenchmarkParse(b *testing.B) {
	const in = "(@p2-16 or @m5 or @csv1) and not @slow and not (@windows or @wip)"
	for b.Loop() {
		if _, err := Parse(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEval(b *testing.B) {
	e := MustParse("(@p2-16 or @m5 or @csv1) and not @slow and not (@windows or @wip)")
	tags := []string{"@p2-16-02", "@p2-16", "@acc-2", "@barrier"}
	for b.Loop() {
		_ = e.Eval(tags)
	}
}
