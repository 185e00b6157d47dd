package ksqlflow

import (
	"fmt"
	"strings"
)

// The parser of queries: SELECT arms joined by UNION ALL, select lists and WHERE conditions.

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
