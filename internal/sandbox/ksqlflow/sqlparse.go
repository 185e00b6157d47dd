package ksqlflow

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// This file holds the lexer and parser of the dialect-1 subset (see doc.go for the grammar).
// The whole script is parsed before anything runs, so a construct outside the subset is a
// VALIDATION_ERROR with a line and column and never half-executed.

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

func (lx *lexer) next() (token, error) {
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
			return token{}, &SyntaxError{Pos{lx.line, lx.col}, diagUnsupported, "block comments /* … */ are not part of dialect 1; use -- comments"}
		default:
			goto tok
		}
	}
	return token{kind: tEOF, pos: Pos{lx.line, lx.col}}, nil
tok:
	p := Pos{lx.line, lx.col}
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
	case unicode.IsDigit(r) || (r == '-' && unicode.IsDigit(lx.peek(1))):
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
	case r == '\'':
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
	case r == '=':
		lx.advance()
		return token{kind: tOp, text: "=", pos: p}, nil
	case r == '!' || r == '<' || r == '>':
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
	case strings.ContainsRune("(),;*.", r):
		lx.advance()
		return token{kind: tPunct, text: string(r), pos: p}, nil
	case r == '"' || r == '`' || r == '[':
		return token{}, &SyntaxError{p, diagUnsupported, fmt.Sprintf("quoted identifiers (%c) are not part of dialect 1; field codes are written bare", r)}
	}
	return token{}, &SyntaxError{p, diagSyntax, fmt.Sprintf("unexpected character %q", r)}
}

// ---- AST ----

// Script is one parsed job file.
type Script struct {
	Header Header
	Stmts  []Stmt
}

// Header is the `-- @ksql key: value` block at the top of a job file.
type Header struct {
	Name       string
	TimeoutSec *int
	Dialect    int
	DependsOn  []string
	NamePos    Pos
}

// Stmt is one statement: *SelectStmt, *CreateTempStmt or *AssertStmt.
type Stmt interface{ StmtPos() Pos }

// SelectStmt is a top-level read whose rows are counted and discarded.
type SelectStmt struct {
	Pos   Pos
	Query *Query
}

// CreateTempStmt is CREATE TEMP TABLE #name AS <query>.
type CreateTempStmt struct {
	Pos   Pos
	Name  string
	Query *Query
}

// AssertStmt is ASSERT <scalar> <op> <scalar>, '<message>'.
type AssertStmt struct {
	Pos         Pos
	Left, Right Scalar
	Op          string
	Message     string
}

// ImportStmt is IMPORT INTO LAPP_<app> FROM CSV '<input>' ENCODING <UTF8|SJIS> BY NAME
// ON DUPLICATE (<key>) OVERWRITE ON ERROR SKIP INTO #<err> (csvimport.go).
type ImportStmt struct {
	Pos      Pos
	App      string // logical app (after LAPP_)
	AppPos   Pos
	Input    string // --import-csv name
	Encoding string // utf8 | sjis
	Key      string // ON DUPLICATE key field
	ErrTable string // ON ERROR SKIP INTO #name
}

func (s *ImportStmt) StmtPos() Pos { return s.Pos }

func (s *SelectStmt) StmtPos() Pos     { return s.Pos }
func (s *CreateTempStmt) StmtPos() Pos { return s.Pos }
func (s *AssertStmt) StmtPos() Pos     { return s.Pos }

// Query is one SELECT or several joined by UNION ALL.
type Query struct{ Arms []*Select }

// Select is one SELECT … FROM … [WHERE …].
type Select struct {
	Pos   Pos
	Items []SelItem
	From  Source
	Where Expr // nil when absent
}

// Item kinds.
const (
	itemField = iota
	itemCount
	itemSum
	itemLiteral // a constant column: SELECT 1
)

// SelItem is one select-list entry.
type SelItem struct {
	Kind  int
	Field string // field code for itemField/itemSum
	Lit   string // value of itemLiteral
	Alias string // output column name
	Pos   Pos
}

// Source is LAPP_<logical> or #temp; None marks a FROM-less SELECT of constants.
type Source struct {
	None bool
	Temp bool
	Name string // logical app name (without LAPP_) or temp name (without #)
	Pos  Pos
}

// Expr is a WHERE condition: *CmpExpr, *InExpr, *BoolExpr.
type Expr interface{ exprNode() }

// CmpExpr is <field> <op> <literal>.
type CmpExpr struct {
	Field string
	Op    string
	Value Literal
	Pos   Pos
}

// InExpr is <field> [NOT] IN (<literal>, …).
type InExpr struct {
	Field  string
	Not    bool
	Values []Literal
	Pos    Pos
}

// BoolExpr is AND/OR of two conditions.
type BoolExpr struct {
	Op   string // "and" | "or"
	L, R Expr
}

func (*CmpExpr) exprNode()  {}
func (*InExpr) exprNode()   {}
func (*BoolExpr) exprNode() {}

// Literal is a number, a string, or a date function resolved at run time against --as-of.
type Literal struct {
	IsNum bool
	Text  string // number text or string value
	Func  string // MONTH_START / NEXT_MONTH_START when set
	Pos   Pos
}

// Scalar is one side of an ASSERT: a literal or a parenthesised scalar subquery.
type Scalar struct {
	Lit   *Literal
	Query *Query
}

// ---- parser ----

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

func (p *parser) query() (*Query, error) {
	q := &Query{}
	for {
		s, err := p.selectArm()
		if err != nil {
			return nil, err
		}
		q.Arms = append(q.Arms, s)
		if !p.isKw("union") {
			break
		}
		unionPos := p.cur().pos
		p.i++
		if !p.isKw("all") {
			return nil, &SyntaxError{unionPos, diagUnsupported, "UNION without ALL is not supported (it needs DISTINCT); write UNION ALL"}
		}
		p.i++
		if !p.isKw("select") {
			return nil, p.errf(diagSyntax, "expected SELECT after UNION ALL, found %s", p.describe())
		}
	}
	for _, kw := range []string{"group", "order", "limit", "having", "join", "inner", "left", "right", "cross", "offset"} {
		if p.isKw(kw) {
			return nil, p.errf(diagUnsupported, "%s is not supported by dialect 1 in this sandbox", strings.ToUpper(kw))
		}
	}
	return q, nil
}

func (p *parser) selectArm() (*Select, error) {
	s := &Select{Pos: p.cur().pos}
	if err := p.expectKw("select"); err != nil {
		return nil, err
	}
	if p.isKw("distinct") {
		return nil, p.errf(diagUnsupported, "SELECT DISTINCT is not supported")
	}
	for {
		it, err := p.selItem()
		if err != nil {
			return nil, err
		}
		s.Items = append(s.Items, it)
		if !p.isPunct(",") {
			break
		}
		p.i++
	}
	allLit := true
	for _, it := range s.Items {
		allLit = allLit && it.Kind == itemLiteral
	}
	if allLit && !p.isKw("from") {
		// SELECT 1: one row of constants, as the deterministic-failure fixtures use.
		s.From = Source{None: true, Pos: s.Pos}
		return s, p.checkItems(s)
	}
	if err := p.expectKw("from"); err != nil {
		return nil, err
	}
	t := p.cur()
	switch {
	case t.kind == tTemp:
		s.From = Source{Temp: true, Name: t.text, Pos: t.pos}
	case t.kind == tIdent && strings.HasPrefix(t.text, "LAPP_") && len(t.text) > len("LAPP_"):
		s.From = Source{Name: strings.TrimPrefix(t.text, "LAPP_"), Pos: t.pos}
	case t.kind == tPunct && t.text == "(":
		return nil, p.errf(diagUnsupported, "subqueries in FROM are not supported")
	default:
		return nil, p.errf(diagSyntax, "expected LAPP_<app> or #temp after FROM, found %s", p.describe())
	}
	p.i++
	if p.isPunct(",") || p.isKw("join") || p.isKw("inner") || p.isKw("left") || p.isKw("cross") {
		return nil, p.errf(diagUnsupported, "joins are not supported by dialect 1 in this sandbox")
	}
	if p.isKw("where") {
		p.i++
		e, err := p.orExpr()
		if err != nil {
			return nil, err
		}
		s.Where = e
	}
	return s, p.checkItems(s)
}

func (p *parser) checkItems(s *Select) error {
	// Aggregates without GROUP BY give one row, so a plain field next to one is meaningless.
	agg, plain := 0, 0
	seen := map[string]bool{}
	for _, it := range s.Items {
		if it.Kind == itemField || it.Kind == itemLiteral {
			plain++
		} else {
			agg++
		}
		if seen[it.Alias] {
			return &SyntaxError{it.Pos, diagColumn, fmt.Sprintf("duplicate output column %q (use AS to rename)", it.Alias)}
		}
		seen[it.Alias] = true
	}
	if agg > 0 && plain > 0 {
		return &SyntaxError{s.Pos, diagUnsupported, "aggregates cannot be mixed with plain fields or constants (GROUP BY is not supported)"}
	}
	return nil
}

func (p *parser) selItem() (SelItem, error) {
	t := p.cur()
	it := SelItem{Pos: t.pos}
	switch {
	case t.kind == tPunct && t.text == "*":
		return it, p.errf(diagUnsupported, "SELECT * is not supported; name the fields")
	case t.kind == tNumber || t.kind == tString:
		p.i++
		it.Kind, it.Lit, it.Alias = itemLiteral, t.text, t.text
	case t.kind == tIdent && (strings.EqualFold(t.text, "count") || strings.EqualFold(t.text, "sum")) && p.toks[p.i+1].kind == tPunct && p.toks[p.i+1].text == "(":
		isCount := strings.EqualFold(t.text, "count")
		p.i += 2
		if isCount {
			if err := p.expectPunct("*"); err != nil {
				return it, p.errf(diagUnsupported, "only COUNT(*) is supported")
			}
			it.Kind, it.Alias = itemCount, "COUNT(*)"
		} else {
			f := p.cur()
			if f.kind != tIdent || reserved[strings.ToLower(f.text)] {
				return it, p.errf(diagSyntax, "expected a field code in SUM(…), found %s", p.describe())
			}
			p.i++
			it.Kind, it.Field, it.Alias = itemSum, f.text, "SUM("+f.text+")"
		}
		if err := p.expectPunct(")"); err != nil {
			return it, err
		}
	case t.kind == tIdent && p.toks[p.i+1].kind == tPunct && p.toks[p.i+1].text == "(":
		return it, p.errf(diagUnsupported, "function %s(…) is not supported (COUNT(*) and SUM(field) only)", t.text)
	case t.kind == tIdent && !reserved[strings.ToLower(t.text)]:
		p.i++
		it.Kind, it.Field, it.Alias = itemField, t.text, t.text
	default:
		return it, p.errf(diagSyntax, "expected a field, COUNT(*) or SUM(field), found %s", p.describe())
	}
	if p.isKw("as") {
		p.i++
		a := p.cur()
		if a.kind != tIdent || reserved[strings.ToLower(a.text)] {
			return it, p.errf(diagSyntax, "expected a column alias after AS, found %s", p.describe())
		}
		p.i++
		it.Alias = a.text
	}
	return it, nil
}

func (p *parser) orExpr() (Expr, error) { return p.chain("or", p.andExpr) }

func (p *parser) andExpr() (Expr, error) { return p.chain("and", p.primary) }

// chain parses operand (kw operand)*, folded to the left: the AND and OR levels of the grammar.
func (p *parser) chain(kw string, operand func() (Expr, error)) (Expr, error) {
	l, err := operand()
	if err != nil {
		return nil, err
	}
	for p.isKw(kw) {
		p.i++
		r, err := operand()
		if err != nil {
			return nil, err
		}
		l = &BoolExpr{Op: kw, L: l, R: r}
	}
	return l, nil
}

func (p *parser) primary() (Expr, error) {
	if p.isPunct("(") {
		p.i++
		e, err := p.orExpr()
		if err != nil {
			return nil, err
		}
		if err := p.expectPunct(")"); err != nil {
			return nil, err
		}
		return e, nil
	}
	t := p.cur()
	if p.isKw("not") {
		return nil, p.errf(diagUnsupported, "NOT before a condition is not supported; use != or NOT IN")
	}
	if t.kind != tIdent || reserved[strings.ToLower(t.text)] {
		return nil, p.errf(diagSyntax, "expected a field code in the condition, found %s", p.describe())
	}
	p.i++
	if p.isKw("not") || p.isKw("in") {
		not := p.isKw("not")
		p.i++
		if not {
			if err := p.expectKw("in"); err != nil {
				return nil, err
			}
		}
		if err := p.expectPunct("("); err != nil {
			return nil, err
		}
		in := &InExpr{Field: t.text, Not: not, Pos: t.pos}
		for {
			lit, err := p.literal()
			if err != nil {
				return nil, err
			}
			in.Values = append(in.Values, lit)
			if !p.isPunct(",") {
				break
			}
			p.i++
		}
		if err := p.expectPunct(")"); err != nil {
			return nil, err
		}
		return in, nil
	}
	for _, kw := range []string{"like", "is", "between"} {
		if p.isKw(kw) {
			return nil, p.errf(diagUnsupported, "%s is not supported; use comparisons (a date range is two comparisons joined by AND)", strings.ToUpper(kw))
		}
	}
	if p.cur().kind != tOp {
		return nil, p.errf(diagSyntax, "expected a comparison operator after %s, found %s", t.text, p.describe())
	}
	op := p.cur().text
	p.i++
	if p.cur().kind == tIdent {
		return nil, p.errf(diagUnsupported, "comparing two fields is not supported; compare a field with a literal")
	}
	lit, err := p.literal()
	if err != nil {
		return nil, err
	}
	return &CmpExpr{Field: t.text, Op: op, Value: lit, Pos: t.pos}, nil
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
