// Package tagexpr parses and evaluates Cucumber tag expressions, which flowtest
// uses to select scenarios (`flowtest run --tags '(@p2-16 or @m5) and not @slow'`).
//
// godog's own tag filter speaks an older Behat syntax (`~@wip`, `&&`, `,`), has
// no parentheses and panics on a trailing comma, so flowtest evaluates
// expressions itself against the tags of the parsed pickles.
//
// Grammar (as Cucumber's tag-expressions):
//
//	expr    = or
//	or      = and { "or" and }          left-associative
//	and     = not { "and" not }         left-associative
//	not     = "not" not | primary
//	primary = TAG | "(" or ")"
//
// Precedence is not > and > or. Tokens are separated by whitespace; "(" and ")"
// are tokens of their own. Inside a tag a backslash escapes the next character;
// only `\\`, `\(`, `\)` and `\<whitespace>` are legal escapes (as in Cucumber),
// so `@a\ b` is the tag "@a b" and `@a\(b\)` is "@a(b)".
//
// Where flowtest is stricter than Cucumber (which accepts any bare word as a
// tag): every operand must start with "@" and have a non-empty name, because a
// bare word in a --tags value is almost always a typo ("AND", "p2-16") that
// would otherwise silently select nothing. Operators are lowercase, as in
// Cucumber; "AND" is refused with a hint.
//
// The empty (or whitespace-only) expression is accepted and matches every
// scenario, as in Cucumber. The runner passes "" when --tags is absent and can
// tell that case apart with Expr.IsEmpty. String() of the empty expression is
// "" (not Cucumber's "true"), so that String always re-parses to the same
// expression.
//
// Matching is exact and case-sensitive on the full tag text including the "@"
// (gherkin reports pickle tags as "@name").
package tagexpr

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Expr is a parsed tag expression. The zero value is the empty expression,
// which matches everything.
type Expr struct {
	root node // nil for the empty expression
}

// Eval reports whether a scenario carrying tags is selected by e.
func (e Expr) Eval(tags []string) bool {
	if e.root == nil {
		return true
	}
	return e.root.eval(tags)
}

// String returns the canonical, fully parenthesised form, e.g.
// "( @a or ( @b and not ( @c ) ) )". Parse(e.String()) yields an equivalent
// expression with the same String. The empty expression prints as "".
func (e Expr) String() string {
	if e.root == nil {
		return ""
	}
	var b strings.Builder
	e.root.format(&b)
	return b.String()
}

// IsEmpty reports whether e is the empty expression (Parse of "" or of
// whitespace only), which matches every scenario.
func (e Expr) IsEmpty() bool { return e.root == nil }

// Tags lists the distinct tags e mentions, in order of first appearance. The
// runner can use it to warn about tags no scenario carries.
func (e Expr) Tags() []string {
	var out []string
	seen := map[string]bool{}
	var walk func(n node)
	walk = func(n node) {
		switch n := n.(type) {
		case literal:
			if !seen[string(n)] {
				seen[string(n)] = true
				out = append(out, string(n))
			}
		case not:
			walk(n.x)
		case binary:
			walk(n.l)
			walk(n.r)
		}
	}
	if e.root != nil {
		walk(e.root)
	}
	return out
}

// SyntaxError describes why an expression was refused. Pos is the 1-based
// column (counted in Unicode characters) of the offending token or character.
type SyntaxError struct {
	Pos   int
	Msg   string
	Input string // the expression as given, for Detail
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("tag expression: %s at column %d", e.Msg, e.Pos)
}

// Detail renders the input with a caret under the offending column, for
// command-line error output:
//
//	(@a or @b))
//	          ^
func (e *SyntaxError) Detail() string {
	pad := e.Pos - 1
	if pad < 0 {
		pad = 0
	}
	// Tabs in the input are kept in the padding so the caret lines up.
	var b strings.Builder
	i := 0
	for _, r := range e.Input {
		if i >= pad {
			break
		}
		if r == '\t' {
			b.WriteRune('\t')
		} else {
			b.WriteRune(' ')
		}
		i++
	}
	for ; i < pad; i++ {
		b.WriteRune(' ')
	}
	return e.Input + "\n" + b.String() + "^"
}

// Parse parses a tag expression. Errors are *SyntaxError.
func Parse(s string) (Expr, error) {
	p := &parser{lx: lexer{src: s, col: 1}}
	if strings.TrimFunc(s, unicode.IsSpace) == "" {
		return Expr{}, nil
	}
	root, err := p.parseOr()
	if err != nil {
		return Expr{}, err
	}
	t, err := p.next()
	if err != nil {
		return Expr{}, err
	}
	switch t.kind {
	case tEOF:
		return Expr{root: root}, nil
	case tRParen:
		return Expr{}, p.errAt(t.col, `unbalanced ")"`)
	default:
		return Expr{}, p.missingOperator(t)
	}
}

// MustParse is Parse for expressions known to be valid (tests, constants).
func MustParse(s string) Expr {
	e, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return e
}

// ---- syntax tree ----

type node interface {
	eval(tags []string) bool
	format(b *strings.Builder)
}

type literal string

func (l literal) eval(tags []string) bool {
	for _, t := range tags {
		if t == string(l) {
			return true
		}
	}
	return false
}

func (l literal) format(b *strings.Builder) {
	for _, r := range string(l) {
		if r == '\\' || r == '(' || r == ')' || unicode.IsSpace(r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
}

type not struct{ x node }

func (n not) eval(tags []string) bool { return !n.x.eval(tags) }

// format follows Cucumber: "not ( @a )", and "not ( @a and @b )" rather than
// doubling the parentheses a binary operand already prints.
func (n not) format(b *strings.Builder) {
	b.WriteString("not ")
	if _, ok := n.x.(binary); ok {
		n.x.format(b)
		return
	}
	b.WriteString("( ")
	n.x.format(b)
	b.WriteString(" )")
}

type binary struct {
	and  bool
	l, r node
}

func (n binary) eval(tags []string) bool {
	if n.and {
		return n.l.eval(tags) && n.r.eval(tags)
	}
	return n.l.eval(tags) || n.r.eval(tags)
}

func (n binary) format(b *strings.Builder) {
	b.WriteString("( ")
	n.l.format(b)
	if n.and {
		b.WriteString(" and ")
	} else {
		b.WriteString(" or ")
	}
	n.r.format(b)
	b.WriteString(" )")
}

// ---- lexer ----

type kind int

const (
	tEOF kind = iota
	tTag
	tAnd
	tOr
	tNot
	tLParen
	tRParen
)

type token struct {
	kind kind
	text string // unescaped tag text, or the operator as written
	col  int
}

func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of expression"
	case tLParen:
		return `"("`
	case tRParen:
		return `")"`
	default:
		return fmt.Sprintf("%q", t.text)
	}
}

// lexer produces tokens on demand, so that the error reported is the leftmost
// one the parser reaches rather than whatever a full pre-scan finds first.
type lexer struct {
	src string
	off int // byte offset
	col int // 1-based column of src[off]
}

func (lx *lexer) peekRune() (rune, int) {
	if lx.off >= len(lx.src) {
		return utf8.RuneError, 0
	}
	return utf8.DecodeRuneInString(lx.src[lx.off:])
}

func (lx *lexer) advance(size int) {
	lx.off += size
	lx.col++
}

func (lx *lexer) next() (token, error) {
	input := lx.src
	for {
		r, size := lx.peekRune()
		if size == 0 || !unicode.IsSpace(r) {
			break
		}
		lx.advance(size)
	}
	r, size := lx.peekRune()
	if size == 0 {
		return token{kind: tEOF, col: lx.col}, nil
	}
	start := lx.col
	switch r {
	case '(':
		lx.advance(size)
		return token{kind: tLParen, text: "(", col: start}, nil
	case ')':
		lx.advance(size)
		return token{kind: tRParen, text: ")", col: start}, nil
	}
	startOff := lx.off
	var word strings.Builder
	escaped := false // whether any escape occurred: an escaped word is never an operator
	for {
		r, size := lx.peekRune()
		if size == 0 || r == '(' || r == ')' || unicode.IsSpace(r) {
			break
		}
		if r == '\\' {
			escCol := lx.col
			lx.advance(size)
			nr, nsize := lx.peekRune()
			if nsize == 0 {
				return token{}, &SyntaxError{Pos: escCol, Msg: `dangling "\" at end of expression (write "\\" for a backslash)`, Input: input}
			}
			if nr != '\\' && nr != '(' && nr != ')' && !unicode.IsSpace(nr) {
				return token{}, &SyntaxError{Pos: escCol, Msg: fmt.Sprintf(`illegal escape "\%c" (only "\\", "\(", "\)" and "\ " are allowed)`, nr), Input: input}
			}
			word.WriteRune(nr)
			lx.advance(nsize)
			escaped = true
			continue
		}
		if r == utf8.RuneError && size == 1 {
			return token{}, &SyntaxError{Pos: lx.col, Msg: "invalid UTF-8", Input: input}
		}
		word.WriteRune(r)
		lx.advance(size)
	}
	w := word.String()
	if !escaped {
		switch w {
		case "and":
			return token{kind: tAnd, text: w, col: start}, nil
		case "or":
			return token{kind: tOr, text: w, col: start}, nil
		case "not":
			return token{kind: tNot, text: w, col: start}, nil
		}
	}
	// The "@" must be written literally: an escaped "\@" is illegal anyway.
	if lx.src[startOff] != '@' {
		msg := fmt.Sprintf(`%q is not a tag (tags start with "@")`, w)
		switch strings.ToLower(w) {
		case "and", "or", "not":
			msg = fmt.Sprintf(`%q is not a tag (operators are lowercase: and, or, not)`, w)
		}
		return token{}, &SyntaxError{Pos: start, Msg: msg, Input: input}
	}
	if w == "@" {
		return token{}, &SyntaxError{Pos: start, Msg: `"@" without a tag name`, Input: input}
	}
	return token{kind: tTag, text: w, col: start}, nil
}

// ---- parser ----

type parser struct {
	lx     lexer
	peeked *token
	prev   token // the last token consumed, for "operator has no operand" messages
	depth  int   // nesting of "(" and "not", bounded by maxDepth
}

// maxDepth bounds the nesting of parentheses and "not", so that no input, however long,
// can exhaust the stack of the recursive parser.
const maxDepth = 200

func (p *parser) enter(t token) error {
	p.depth++
	if p.depth > maxDepth {
		return p.errAt(t.col, fmt.Sprintf("nested more than %d levels deep", maxDepth))
	}
	return nil
}

func (p *parser) next() (token, error) {
	if p.peeked != nil {
		t := *p.peeked
		p.peeked = nil
		p.prev = t
		return t, nil
	}
	t, err := p.lx.next()
	if err != nil {
		return token{}, err
	}
	p.prev = t
	return t, nil
}

func (p *parser) peek() (token, error) {
	if p.peeked != nil {
		return *p.peeked, nil
	}
	prev := p.prev
	t, err := p.next()
	if err != nil {
		return token{}, err
	}
	p.prev = prev
	p.peeked = &t
	return t, nil
}

func (p *parser) errAt(col int, msg string) error {
	return &SyntaxError{Pos: col, Msg: msg, Input: p.lx.src}
}

func (p *parser) missingOperator(t token) error {
	return p.errAt(t.col, fmt.Sprintf(`missing "and" or "or" before %s`, t.describe()))
}

func (p *parser) parseOr() (node, error) { return p.parseChain(tOr, false, p.parseAnd) }

func (p *parser) parseAnd() (node, error) { return p.parseChain(tAnd, true, p.parseNot) }

// parseChain parses operands joined by one left-associative operator (op: tOr or tAnd).
func (p *parser) parseChain(op kind, and bool, operand func() (node, error)) (node, error) {
	l, err := operand()
	if err != nil {
		return nil, err
	}
	for {
		t, err := p.peek()
		if err != nil {
			return nil, err
		}
		if t.kind != op {
			return l, nil
		}
		_, _ = p.next()
		r, err := operand()
		if err != nil {
			return nil, err
		}
		l = binary{and: and, l: l, r: r}
	}
}

func (p *parser) parseNot() (node, error) {
	t, err := p.peek()
	if err != nil {
		return nil, err
	}
	if t.kind != tNot {
		return p.parsePrimary()
	}
	_, _ = p.next()
	if err := p.enter(t); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	x, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	return not{x: x}, nil
}

// parsePrimary expects a tag or a parenthesised expression. What came before
// (p.prev) decides the wording of the error when something else is found.
func (p *parser) parsePrimary() (node, error) {
	before := p.prev
	t, err := p.next()
	if err != nil {
		return nil, err
	}
	switch t.kind {
	case tTag:
		return literal(t.text), nil
	case tLParen:
		if err := p.enter(t); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		inner, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		c, err := p.next()
		if err != nil {
			return nil, err
		}
		switch c.kind {
		case tRParen:
			return inner, nil
		case tEOF:
			return nil, p.errAt(t.col, `unbalanced "(" (no matching ")")`)
		default:
			return nil, p.missingOperator(c)
		}
	}
	// A tag or "(" was required but t was found.
	isOp := func(k kind) bool { return k == tAnd || k == tOr || k == tNot }
	switch {
	case isOp(before.kind):
		// "@a and", "@a and or @b", "(not)", "not )".
		return nil, p.errAt(before.col, fmt.Sprintf(`%q has no operand after it (found %s)`, before.text, t.describe()))
	case t.kind == tAnd || t.kind == tOr:
		// "and @a", "( or @b )".
		return nil, p.errAt(t.col, fmt.Sprintf(`%q has no operand before it`, t.text))
	case t.kind == tRParen && before.kind == tLParen:
		return nil, p.errAt(before.col, `empty parentheses "()"`)
	case t.kind == tRParen:
		return nil, p.errAt(t.col, `unbalanced ")"`)
	case t.kind == tEOF && before.kind == tLParen:
		return nil, p.errAt(before.col, `unbalanced "(" (no matching ")")`)
	default:
		// Not reachable with the grammar above (EOF at the start is the empty
		// expression); kept so that a future change fails with a clear message.
		return nil, p.errAt(t.col, fmt.Sprintf(`expected a tag or "(", found %s`, t.describe()))
	}
}
