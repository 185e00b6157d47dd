package ksqlflow

import (
	"fmt"
	"strconv"
	"strings"
)

// This file holds the parser of the dialect-1 subset (see doc.go for the grammar): the
// script, its header and statements; queries and conditions are in sqlquery.go, the lexer in
// sqllex.go. The whole script is parsed before anything runs, so a construct outside the
// subset is a VALIDATION_ERROR with a line and column and never half-executed.

type parser struct {
	toks []token
	i    int
}

// keywords that can never be field codes in this subset; anything else is a field.
var reserved = map[string]bool{
	"select": true, "from": true, "where": true, "and": true, "or": true, "not": true, "in": true,
	"union": true, "all": true, "as": true, "create": true, "temp": true, "temporary": true,
	"table": true, "assert": true, "count": true, "sum": true, "group": true, "order": true,
	"by": true, "join": true, "limit": true, "having": true, "insert": true, "update": true,
	"delete": true, "import": true, "into": true, "on": true, "distinct": true, "between": true,
	"like": true, "is": true, "null": true,
}

// ParseScript parses a job file. The header is read from the leading comment lines.
func ParseScript(src string) (*Script, error) {
	src = strings.TrimPrefix(src, "\ufeff") // editors on Windows save a BOM
	h, err := parseHeader(src)
	if err != nil {
		return nil, err
	}
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	sc := &Script{Header: h}
	for {
		for p.isPunct(";") {
			p.i++
		}
		if p.cur().kind == tEOF {
			break
		}
		st, err := p.statement()
		if err != nil {
			return nil, err
		}
		sc.Stmts = append(sc.Stmts, st)
		if p.cur().kind != tEOF && !p.isPunct(";") {
			return nil, p.errf(diagSyntax, "expected ';' after the statement, found %s", p.describe())
		}
	}
	if len(sc.Stmts) == 0 {
		return nil, &SyntaxError{Pos{1, 1}, diagSyntax, "the job has no statement"}
	}
	return sc, nil
}

func parseHeader(src string) (Header, error) {
	h := Header{}
	for n, line := range strings.Split(src, "\n") {
		t := strings.TrimSpace(line)
		if t == "" {
			continue
		}
		if !strings.HasPrefix(t, "--") {
			break // the header ends at the first non-comment line
		}
		body := strings.TrimSpace(strings.TrimPrefix(t, "--"))
		if !strings.HasPrefix(body, "@ksql") {
			continue
		}
		pos := Pos{n + 1, 1}
		kv := strings.TrimSpace(strings.TrimPrefix(body, "@ksql"))
		key, val, ok := strings.Cut(kv, ":")
		if !ok {
			return h, &SyntaxError{pos, diagHeader, fmt.Sprintf("header %q: expected '-- @ksql <key>: <value>'", t)}
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "name":
			if val == "" {
				return h, &SyntaxError{pos, diagHeader, "empty job name"}
			}
			h.Name, h.NamePos = val, pos
		case "timeout":
			v, err := strconv.Atoi(strings.TrimSuffix(val, "s"))
			if err != nil || v <= 0 {
				return h, &SyntaxError{pos, diagHeader, fmt.Sprintf("timeout %q: expected a positive number of seconds", val)}
			}
			h.TimeoutSec = &v
		case "dialect":
			v, err := strconv.Atoi(val)
			if err != nil || v != 1 {
				return h, &SyntaxError{pos, diagHeader, fmt.Sprintf("dialect %q: only dialect 1 is supported", val)}
			}
			h.Dialect = v
		case "depends_on", "dependsOn":
			for _, d := range strings.Split(val, ",") {
				if d = strings.TrimSpace(d); d != "" {
					h.DependsOn = append(h.DependsOn, d)
				}
			}
		default:
			return h, &SyntaxError{pos, diagHeader, fmt.Sprintf("unknown header key %q", key)}
		}
	}
	if h.Dialect == 0 {
		h.Dialect = 1 // an absent dialect header means the only dialect there is
	}
	return h, nil
}

func (p *parser) cur() token { return p.toks[p.i] }

func (p *parser) describe() string {
	t := p.cur()
	switch t.kind {
	case tEOF:
		return "end of file"
	case tString:
		return fmt.Sprintf("'%s'", t.text)
	case tTemp:
		return "#" + t.text
	case tFunc:
		return "@" + t.text
	}
	return fmt.Sprintf("%q", t.text)
}

func (p *parser) errf(code, format string, a ...any) error {
	return &SyntaxError{p.cur().pos, code, fmt.Sprintf(format, a...)}
}

func (p *parser) isKw(kw string) bool {
	t := p.cur()
	return t.kind == tIdent && strings.EqualFold(t.text, kw)
}

func (p *parser) isPunct(s string) bool {
	t := p.cur()
	return t.kind == tPunct && t.text == s
}

func (p *parser) expectKw(kw string) error {
	if !p.isKw(kw) {
		return p.errf(diagSyntax, "expected %s, found %s", strings.ToUpper(kw), p.describe())
	}
	p.i++
	return nil
}

func (p *parser) expectPunct(s string) error {
	if !p.isPunct(s) {
		return p.errf(diagSyntax, "expected '%s', found %s", s, p.describe())
	}
	p.i++
	return nil
}

func (p *parser) statement() (Stmt, error) {
	pos := p.cur().pos
	switch {
	case p.isKw("select"):
		q, err := p.query()
		if err != nil {
			return nil, err
		}
		return &SelectStmt{Pos: pos, Query: q}, nil
	case p.isKw("create"):
		p.i++
		if !p.isKw("temp") && !p.isKw("temporary") {
			return nil, p.errf(diagUnsupported, "only CREATE TEMP TABLE #name AS SELECT … is supported, found CREATE %s", p.describe())
		}
		p.i++
		if err := p.expectKw("table"); err != nil {
			return nil, err
		}
		if p.cur().kind != tTemp {
			return nil, p.errf(diagSyntax, "expected a temp table name #name, found %s", p.describe())
		}
		name := p.cur().text
		p.i++
		if err := p.expectKw("as"); err != nil {
			return nil, err
		}
		if !p.isKw("select") {
			return nil, p.errf(diagSyntax, "expected SELECT after AS, found %s", p.describe())
		}
		q, err := p.query()
		if err != nil {
			return nil, err
		}
		return &CreateTempStmt{Pos: pos, Name: name, Query: q}, nil
	case p.isKw("assert"):
		p.i++
		l, err := p.scalar()
		if err != nil {
			return nil, err
		}
		if p.cur().kind != tOp {
			return nil, p.errf(diagSyntax, "expected a comparison operator in ASSERT, found %s", p.describe())
		}
		op := p.cur().text
		p.i++
		r, err := p.scalar()
		if err != nil {
			return nil, err
		}
		if err := p.expectPunct(","); err != nil {
			return nil, err
		}
		if p.cur().kind != tString {
			return nil, p.errf(diagSyntax, "expected the ASSERT message as a '…' string, found %s", p.describe())
		}
		msg := p.cur().text
		p.i++
		return &AssertStmt{Pos: pos, Left: l, Op: op, Right: r, Message: msg}, nil
	case p.isKw("import"):
		return p.importStmt(pos)
	case p.cur().kind == tIdent:
		return nil, p.errf(diagUnsupported, "statement %s is not supported by dialect 1 in this sandbox (SELECT, CREATE TEMP TABLE, ASSERT only)", strings.ToUpper(p.cur().text))
	}
	return nil, p.errf(diagSyntax, "expected a statement, found %s", p.describe())
}

func (p *parser) scalar() (Scalar, error) {
	if p.isPunct("(") {
		p.i++
		if !p.isKw("select") {
			return Scalar{}, p.errf(diagSyntax, "expected SELECT inside the ASSERT parentheses, found %s", p.describe())
		}
		q, err := p.query()
		if err != nil {
			return Scalar{}, err
		}
		if err := p.expectPunct(")"); err != nil {
			return Scalar{}, err
		}
		return Scalar{Query: q}, nil
	}
	lit, err := p.literal()
	if err != nil {
		return Scalar{}, err
	}
	return Scalar{Lit: &lit}, nil
}

func (p *parser) literal() (Literal, error) {
	t := p.cur()
	switch t.kind {
	case tNumber:
		p.i++
		return Literal{IsNum: true, Text: t.text, Pos: t.pos}, nil
	case tString:
		p.i++
		return Literal{Text: t.text, Pos: t.pos}, nil
	case tFunc:
		name := strings.ToUpper(t.text)
		if name != "MONTH_START" && name != "NEXT_MONTH_START" {
			return Literal{}, p.errf(diagUnsupported, "function @%s is not supported (only @MONTH_START() and @NEXT_MONTH_START())", t.text)
		}
		p.i++
		if err := p.expectPunct("("); err != nil {
			return Literal{}, err
		}
		if err := p.expectPunct(")"); err != nil {
			return Literal{}, err
		}
		return Literal{Func: name, Pos: t.pos}, nil
	}
	return Literal{}, p.errf(diagSyntax, "expected a number, a '…' string or @MONTH_START(), found %s", p.describe())
}

// importStmt parses IMPORT INTO LAPP_<app> FROM CSV '<input>' ENCODING <UTF8|SJIS> BY NAME
// ON DUPLICATE (<key>) OVERWRITE ON ERROR SKIP INTO #<err> (csvimport.go).
func (p *parser) importStmt(pos Pos) (Stmt, error) {
	p.i++
	if err := p.expectKw("into"); err != nil {
		return nil, err
	}
	t := p.cur()
	if t.kind != tIdent || !strings.HasPrefix(t.text, "LAPP_") || len(t.text) == len("LAPP_") {
		return nil, p.errf(diagSyntax, "expected LAPP_<app> after IMPORT INTO, found %s", p.describe())
	}
	s := &ImportStmt{Pos: pos, App: strings.TrimPrefix(t.text, "LAPP_"), AppPos: t.pos}
	p.i++
	for _, kw := range []string{"from", "csv"} {
		if err := p.expectKw(kw); err != nil {
			return nil, err
		}
	}
	if p.cur().kind != tString {
		return nil, p.errf(diagSyntax, "expected the input name as a '…' string, found %s", p.describe())
	}
	s.Input = p.cur().text
	p.i++
	if err := p.expectKw("encoding"); err != nil {
		return nil, err
	}
	switch {
	case p.isKw("utf8"):
		s.Encoding = "utf8"
	case p.isKw("sjis"):
		s.Encoding = "sjis"
	default:
		return nil, p.errf(diagSyntax, "expected ENCODING UTF8 or SJIS, found %s", p.describe())
	}
	p.i++
	for _, kw := range []string{"by", "name", "on", "duplicate"} {
		if err := p.expectKw(kw); err != nil {
			return nil, err
		}
	}
	if err := p.expectPunct("("); err != nil {
		return nil, err
	}
	if p.cur().kind != tIdent {
		return nil, p.errf(diagSyntax, "expected the key field in ON DUPLICATE (…), found %s", p.describe())
	}
	s.Key = p.cur().text
	p.i++
	if err := p.expectPunct(")"); err != nil {
		return nil, err
	}
	for _, kw := range []string{"overwrite", "on", "error", "skip", "into"} {
		if err := p.expectKw(kw); err != nil {
			return nil, err
		}
	}
	if p.cur().kind != tTemp {
		return nil, p.errf(diagSyntax, "expected the error table #name after SKIP INTO, found %s", p.describe())
	}
	s.ErrTable = p.cur().text
	p.i++
	return s, nil
}
