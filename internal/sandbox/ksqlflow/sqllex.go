package ksqlflow

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// The lexer of the dialect-1 subset (see doc.go for the grammar): positions, syntax errors
// with their diagnostic codes, and the tokens the parser (sqlparse.go) reads.

// Pos is a 1-based line and column (columns count Unicode code points).
type Pos struct{ Line, Col int }

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// SyntaxError is a parse or static-check failure at a position.
type SyntaxError struct {
	Pos  Pos
	Code string // diagnostic code, e.g. KSQL1001
	Msg  string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Pos.Line, e.Pos.Col, e.Msg)
}

// Diagnostic codes. Only KSQL1306 is a nondeterminism code in the real product; the others
// are this sandbox's own numbering (the real numbering is not public).
const (
	diagSyntax      = "KSQL1001" // token or grammar error
	diagUnsupported = "KSQL1002" // valid SQL outside the dialect-1 subset
	diagHeader      = "KSQL1003" // bad or missing header comment
	diagUnknownApp  = "KSQL1101" // LAPP_<name> not in the profile
	diagUnknownTemp = "KSQL1102" // #temp read before it is created, or created twice
	diagColumn      = "KSQL1103" // column problems (unknown temp column, arity mismatch)
)

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tTemp   // #name
	tFunc   // @NAME
	tNumber // 123, 1.5
	tString // '...'
	tOp     // = != <> < <= > >=
	tPunct  // ( ) , ; * .
)

type token struct {
	kind tokKind
	text string // identifier/keyword text as written; string literal unescaped
	pos  Pos
}

type lexer struct {
	src       []rune
	i         int
	line, col int
}

func lex(src string) ([]token, error) {
	lx := &lexer{src: []rune(src), line: 1, col: 1}
	var out []token
	for {
		t, err := lx.next()
		if err != nil {
			return nil, err
		}
		out = append(out, t)
		if t.kind == tEOF {
			return out, nil
		}
	}
}

func (lx *lexer) peek(off int) rune {
	if lx.i+off < len(lx.src) {
		return lx.src[lx.i+off]
	}
	return 0
}

func (lx *lexer) advance() rune {
	r := lx.src[lx.i]
	lx.i++
	if r == '\n' {
		lx.line++
		lx.col = 1
	} else {
		lx.col++
	}
	return r
}

func isIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }
func isIdentPart(r rune) bool  { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// next reads the next token (tEOF at the end), after blanks and -- comments.
func (lx *lexer) next() (token, error) {
	if err := lx.skipBlank(); err != nil {
		return token{}, err
	}
	p := Pos{lx.line, lx.col}
	if lx.i >= len(lx.src) {
		return token{kind: tEOF, pos: p}, nil
	}
	r := lx.peek(0)
	switch {
	case r == '$' || isIdentStart(r):
		start := lx.i
		lx.advance()
		for lx.i < len(lx.src) && isIdentPart(lx.peek(0)) {
			lx.advance()
		}
		return token{kind: tIdent, text: string(lx.src[start:lx.i]), pos: p}, nil
	case r == '#' || r == '@':
		return lx.sigilName(p, r)
	case unicode.IsDigit(r) || (r == '-' && unicode.IsDigit(lx.peek(1))):
		return lx.number(p)
	case r == '\'':
		return lx.stringLit(p)
	case r == '=':
		lx.advance()
		return token{kind: tOp, text: "=", pos: p}, nil
	case r == '!' || r == '<' || r == '>':
		return lx.comparison(p, r)
	case strings.ContainsRune("(),;*.", r):
		lx.advance()
		return token{kind: tPunct, text: string(r), pos: p}, nil
	case r == '"' || r == '`' || r == '[':
		return token{}, &SyntaxError{p, diagUnsupported, fmt.Sprintf("quoted identifiers (%c) are not part of dialect 1; field codes are written bare", r)}
	}
	return token{}, &SyntaxError{p, diagSyntax, fmt.Sprintf("unexpected character %q", r)}
}

// skipBlank skips white space (the ideographic space too) and -- comments; a block comment
// is refused, not skipped.
func (lx *lexer) skipBlank() error {
	for lx.i < len(lx.src) {
		r := lx.peek(0)
		switch {
		case unicode.IsSpace(r) || r == '\u3000':
			lx.advance()
		case r == '-' && lx.peek(1) == '-':
			for lx.i < len(lx.src) && lx.peek(0) != '\n' {
				lx.advance()
			}
		case r == '/' && lx.peek(1) == '*':
			return &SyntaxError{Pos{lx.line, lx.col}, diagUnsupported, "block comments /* … */ are not part of dialect 1; use -- comments"}
		default:
			return nil
		}
	}
	return nil
}

// sigilName reads #temp (tTemp) or @FUNC (tFunc); the token's text is the name without the sigil.
func (lx *lexer) sigilName(p Pos, r rune) (token, error) {
	lx.advance()
	if !isIdentStart(lx.peek(0)) {
		return token{}, &SyntaxError{p, diagSyntax, fmt.Sprintf("%q must be followed by a name", r)}
	}
	start := lx.i
	for lx.i < len(lx.src) && isIdentPart(lx.peek(0)) {
		lx.advance()
	}
	k := tTemp
	if r == '@' {
		k = tFunc
	}
	return token{kind: k, text: string(lx.src[start:lx.i]), pos: p}, nil
}

// number reads a number literal, optionally negative, digits and dots that must parse as a float.
func (lx *lexer) number(p Pos) (token, error) {
	start := lx.i
	lx.advance()
	for lx.i < len(lx.src) && (unicode.IsDigit(lx.peek(0)) || lx.peek(0) == '.') {
		lx.advance()
	}
	text := string(lx.src[start:lx.i])
	if _, err := strconv.ParseFloat(text, 64); err != nil {
		return token{}, &SyntaxError{p, diagSyntax, fmt.Sprintf("bad number %q", text)}
	}
	return token{kind: tNumber, text: text, pos: p}, nil
}

// stringLit reads a quoted string on one line, a doubled quote standing for one.
func (lx *lexer) stringLit(p Pos) (token, error) {
	lx.advance()
	var b strings.Builder
	for {
		if lx.i >= len(lx.src) {
			return token{}, &SyntaxError{p, diagSyntax, "unterminated string literal"}
		}
		c := lx.advance()
		if c == '\'' {
			if lx.peek(0) == '\'' { // '' is an escaped quote
				lx.advance()
				b.WriteRune('\'')
				continue
			}
			return token{kind: tString, text: b.String(), pos: p}, nil
		}
		if c == '\n' {
			return token{}, &SyntaxError{p, diagSyntax, "newline inside a string literal"}
		}
		b.WriteRune(c)
	}
}

// comparison reads !=, <, <=, <> (as !=), > or >=; a lone ! is refused.
func (lx *lexer) comparison(p Pos, r rune) (token, error) {
	lx.advance()
	text := string(r)
	if lx.peek(0) == '=' || (r == '<' && lx.peek(0) == '>') {
		text += string(lx.advance())
	}
	if text == "!" {
		return token{}, &SyntaxError{p, diagSyntax, "unexpected '!'"}
	}
	if text == "<>" {
		text = "!="
	}
	return token{kind: tOp, text: text, pos: p}, nil
}
