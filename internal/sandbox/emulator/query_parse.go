package emulator

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The kintone query language subset: conditions with = != > < >= <= in, not in, like,
// not like, is empty, is not empty, and/or (and binds tighter), parentheses; order by several
// keys; limit; offset; date functions. Decisions where kintone's docs are silent:
//   - keywords (and, or, in, like, order by, asc, desc, limit, offset) are case-insensitive;
//   - string = / in / != / not in compare exactly (case-sensitive) on unique text fields,
//     drop-downs and users, as do unique checks; on non-unique SINGLE_LINE_TEXT they are
//     kintone's token match (tokenTerm in query_eval.go);
//   - order by without asc/desc sorts descending (like kintone's default $id desc), and ties
//     are broken by $id descending; empty values sort as the smallest;
//   - date functions use JST (+09:00), the time zone of the API-token "Administrator" user.

type pred func(r *record) bool

type orderKey struct {
	f    *qfield
	desc bool
}

// query is a compiled kintone query.
type query struct {
	where    pred
	hint     *indexHint
	order    []orderKey
	limit    int
	offset   int
	hasLimit bool
	hasOff   bool
}

// indexHint lets a top-level `<unique field> in/= (...)` or `$id in/=` use the index.
type indexHint struct {
	code   string // "" for $id
	values []string
}

type parser struct {
	a    *app
	toks []token
	pos  int
}

func (p *parser) peek() token { return p.toks[p.pos] }
func (p *parser) next() token { t := p.toks[p.pos]; p.pos++; return t }

func (p *parser) isWord(w string) bool {
	t := p.peek()
	return t.kind == tWord && strings.EqualFold(t.text, w)
}

func (p *parser) isWordAt(off int, w string) bool {
	if p.pos+off >= len(p.toks) {
		return false
	}
	t := p.toks[p.pos+off]
	return t.kind == tWord && strings.EqualFold(t.text, w)
}

// parseQuery compiles q for app a.
func parseQuery(a *app, q string, now time.Time) (*query, *apiError) {
	toks, aerr := lex(q)
	if aerr != nil {
		return nil, aerr
	}
	p := &parser{a: a, toks: toks}
	out := &query{limit: 100}
	if !(p.peek().kind == tEOF || p.isWord("order") && p.isWordAt(1, "by") || p.isWord("limit") || p.isWord("offset")) {
		w, hint, aerr := p.parseOr(now)
		if aerr != nil {
			return nil, aerr
		}
		out.where = w
		out.hint = hint
	}
	if p.isWord("order") {
		p.next()
		if !p.isWord("by") {
			return nil, errQuerySyntax()
		}
		p.next()
		for {
			t := p.next()
			if t.kind != tWord {
				return nil, errQuerySyntax()
			}
			f, ok := a.queryField(t.text)
			if !ok {
				return nil, errUnknownField(t.text)
			}
			switch f.kind {
			case kMText, kCheck, kFile, kUser:
				return nil, errField("query", fmt.Sprintf("The field (code: %s) cannot be used in order by.", t.text))
			}
			k := orderKey{f: f, desc: true}
			if p.isWord("asc") {
				p.next()
				k.desc = false
			} else if p.isWord("desc") {
				p.next()
			}
			out.order = append(out.order, k)
			if p.peek().kind != tComma {
				break
			}
			p.next()
		}
	}
	if p.isWord("limit") {
		p.next()
		n, aerr := p.parseInt()
		if aerr != nil {
			return nil, aerr
		}
		if n > 500 {
			return nil, errQuery("GAIA_QU01", "limit must be 500 or less.")
		}
		out.limit, out.hasLimit = n, true
	}
	if p.isWord("offset") {
		p.next()
		n, aerr := p.parseInt()
		if aerr != nil {
			return nil, aerr
		}
		if n > 10000 {
			return nil, errQuery("GAIA_QU02", "offset must be 10000 or less.")
		}
		out.offset, out.hasOff = n, true
	}
	if p.peek().kind != tEOF {
		return nil, errQuerySyntax()
	}
	return out, nil
}

func (p *parser) parseInt() (int, *apiError) {
	t := p.next()
	if t.kind != tWord {
		return 0, errQuerySyntax()
	}
	n, err := strconv.Atoi(t.text)
	if err != nil || n < 0 {
		return 0, errQuerySyntax()
	}
	return n, nil
}

func errUnknownField(code string) *apiError {
	return errQuery("GAIA_IQ11", fmt.Sprintf("The specified field (%s) does not exist.", code))
}

func (p *parser) parseOr(now time.Time) (pred, *indexHint, *apiError) {
	left, hint, aerr := p.parseAnd(now)
	if aerr != nil {
		return nil, nil, aerr
	}
	for p.isWord("or") {
		p.next()
		right, _, aerr := p.parseAnd(now)
		if aerr != nil {
			return nil, nil, aerr
		}
		l, r := left, right
		left = func(rec *record) bool { return l(rec) || r(rec) }
		hint = nil // an or can reach records outside the hinted set
	}
	return left, hint, nil
}

func (p *parser) parseAnd(now time.Time) (pred, *indexHint, *apiError) {
	left, hint, aerr := p.parseFactor(now)
	if aerr != nil {
		return nil, nil, aerr
	}
	for p.isWord("and") {
		p.next()
		right, h2, aerr := p.parseFactor(now)
		if aerr != nil {
			return nil, nil, aerr
		}
		l, r := left, right
		left = func(rec *record) bool { return l(rec) && r(rec) }
		if hint == nil {
			hint = h2
		}
	}
	return left, hint, nil
}

func (p *parser) parseFactor(now time.Time) (pred, *indexHint, *apiError) {
	if p.peek().kind == tLParen {
		p.next()
		e, hint, aerr := p.parseOr(now)
		if aerr != nil {
			return nil, nil, aerr
		}
		if p.next().kind != tRParen {
			return nil, nil, errQuerySyntax()
		}
		return e, hint, nil
	}
	return p.parseCond(now)
}

// literal is a parsed query value: a string/number, or a time range from a date function.
type literal struct {
	s        string
	isRange  bool   // date/datetime literal expanded to [lo, hi)
	lo, hi   string // in the field's stored layout
	function string // name for function calls (validated per field kind)
	args     []string
}

func (p *parser) parseValue() (literal, *apiError) {
	t := p.next()
	switch t.kind {
	case tString:
		return literal{s: t.text}, nil
	case tWord:
		if p.peek().kind == tLParen { // function call
			p.next()
			var args []string
			for p.peek().kind != tRParen {
				a := p.next()
				if a.kind != tWord && a.kind != tString {
					return literal{}, errQuerySyntax()
				}
				args = append(args, a.text)
				if p.peek().kind == tComma {
					p.next()
				} else if p.peek().kind != tRParen {
					return literal{}, errQuerySyntax()
				}
			}
			p.next()
			return literal{function: strings.ToUpper(t.text), args: args}, nil
		}
		if _, err := strconv.ParseFloat(t.text, 64); err == nil {
			return literal{s: t.text}, nil
		}
	}
	return literal{}, errQuerySyntax()
}

func (p *parser) parseCond(now time.Time) (pred, *indexHint, *apiError) {
	ft := p.next()
	if ft.kind != tWord {
		return nil, nil, errQuerySyntax()
	}
	// Operator
	var op string
	switch t := p.peek(); {
	case t.kind == tOp:
		op = p.next().text
	case p.isWord("in"):
		p.next()
		op = "in"
	case p.isWord("like"):
		p.next()
		op = "like"
	case p.isWord("not") && p.isWordAt(1, "in"):
		p.pos += 2
		op = "not in"
	case p.isWord("not") && p.isWordAt(1, "like"):
		p.pos += 2
		op = "not like"
	case p.isWord("is") && p.isWordAt(1, "empty"):
		p.pos += 2
		op = "is empty"
	case p.isWord("is") && p.isWordAt(1, "not") && p.isWordAt(2, "empty"):
		p.pos += 3
		op = "is not empty"
	default:
		return nil, nil, errQuerySyntax()
	}
	f, ok := p.a.queryField(ft.text)
	if !ok {
		return nil, nil, errUnknownField(ft.text)
	}
	if !slices.Contains(allowedOps[f.kind], op) {
		return nil, nil, errQuery("GAIA_IQ03", fmt.Sprintf("The operator (%s) cannot be used for the field type of the field (code: %s).", op, f.code))
	}
	var vals []literal
	switch op {
	case "is empty", "is not empty":
	case "in", "not in":
		if p.next().kind != tLParen {
			return nil, nil, errQuerySyntax()
		}
		for {
			v, aerr := p.parseValue()
			if aerr != nil {
				return nil, nil, aerr
			}
			vals = append(vals, v)
			t := p.next()
			if t.kind == tRParen {
				break
			}
			if t.kind != tComma {
				return nil, nil, errQuerySyntax()
			}
		}
	default:
		v, aerr := p.parseValue()
		if aerr != nil {
			return nil, nil, aerr
		}
		vals = append(vals, v)
	}
	for i := range vals {
		if aerr := resolveLiteral(f, &vals[i], now); aerr != nil {
			return nil, nil, aerr
		}
	}
	return compileCond(f, op, vals)
}
