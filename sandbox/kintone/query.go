package kintone

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// The kintone query language subset: conditions with = != > < >= <= in, not in, like,
// not like, is empty, is not empty, and/or (and binds tighter), parentheses; order by several
// keys; limit; offset; date functions. Decisions where kintone's docs are silent:
//   - keywords (and, or, in, like, order by, asc, desc, limit, offset) are case-insensitive;
//   - string = / in / != compare exactly (case-sensitive), as do unique checks;
//   - order by without asc/desc sorts descending (like kintone's default $id desc), and ties
//     are broken by $id descending; empty values sort as the smallest;
//   - date functions use JST (+09:00), the time zone of the API-token "Administrator" user.

// jst is the user time zone of token requests (fixed offset: Japan has no DST).
var jst = time.FixedZone("JST", 9*3600)

type tokKind int

const (
	tEOF tokKind = iota
	tWord
	tString
	tOp
	tLParen
	tRParen
	tComma
)

type token struct {
	kind tokKind
	text string
}

func lex(q string) ([]token, *apiError) {
	var out []token
	rs := []rune(q)
	i := 0
	isSpace := func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\u3000' }
	for i < len(rs) {
		r := rs[i]
		switch {
		case isSpace(r):
			i++
		case r == '(':
			out = append(out, token{tLParen, "("})
			i++
		case r == ')':
			out = append(out, token{tRParen, ")"})
			i++
		case r == ',':
			out = append(out, token{tComma, ","})
			i++
		case r == '"':
			var sb strings.Builder
			i++
			closed := false
			for i < len(rs) {
				c := rs[i]
				if c == '\\' && i+1 < len(rs) {
					switch rs[i+1] {
					case 't':
						sb.WriteRune('\t')
					case 'n':
						sb.WriteRune('\n')
					default:
						sb.WriteRune(rs[i+1])
					}
					i += 2
					continue
				}
				if c == '\t' || c == '\n' {
					return nil, errQuerySyntax() // raw control characters inside a literal
				}
				if c == '"' {
					closed = true
					i++
					break
				}
				sb.WriteRune(c)
				i++
			}
			if !closed {
				return nil, errQuerySyntax()
			}
			out = append(out, token{tString, sb.String()})
		case r == '=' || r == '!' || r == '<' || r == '>':
			if i+1 < len(rs) && rs[i+1] == '=' {
				out = append(out, token{tOp, string(rs[i : i+2])})
				i += 2
			} else if r == '!' {
				return nil, errQuerySyntax()
			} else {
				out = append(out, token{tOp, string(r)})
				i++
			}
		default:
			j := i
			for j < len(rs) && !isSpace(rs[j]) && !strings.ContainsRune("()=!<>,\"", rs[j]) {
				j++
			}
			out = append(out, token{tWord, string(rs[i:j])})
			i = j
		}
	}
	return append(out, token{tEOF, ""}), nil
}

// field kinds for query purposes
type qkind int

const (
	kID qkind = iota
	kRecNo
	kText
	kMText
	kNumber
	kDateTime // DATETIME, CREATED_TIME, UPDATED_TIME
	kDate
	kChoice // DROP_DOWN
	kCheck  // CHECK_BOX
	kFile
	kUser // CREATOR, MODIFIER
)

type qfield struct {
	code string
	kind qkind
	def  *FieldDef
	get  func(r *record) any
}

func (a *app) queryField(code string) (*qfield, bool) {
	switch code {
	case codeID:
		return &qfield{code: code, kind: kID}, true
	case codeRecordNo:
		return &qfield{code: code, kind: kRecNo}, true
	case codeCreatedAt:
		return &qfield{code: code, kind: kDateTime, get: func(r *record) any { return r.created }}, true
	case codeModifiedAt:
		return &qfield{code: code, kind: kDateTime, get: func(r *record) any { return r.updated }}, true
	case codeCreator, codeModifier:
		return &qfield{code: code, kind: kUser, get: func(*record) any { return adminCode }}, true
	}
	f := a.fields[code]
	if f == nil {
		return nil, false
	}
	qf := &qfield{code: code, def: f, get: func(r *record) any { return r.vals[code] }}
	switch f.Type {
	case "SINGLE_LINE_TEXT":
		qf.kind = kText
	case "MULTI_LINE_TEXT":
		qf.kind = kMText
	case "NUMBER":
		qf.kind = kNumber
	case "DATETIME":
		qf.kind = kDateTime
	case "DATE":
		qf.kind = kDate
	case "DROP_DOWN":
		qf.kind = kChoice
	case "CHECK_BOX":
		qf.kind = kCheck
	case "FILE":
		qf.kind = kFile
	}
	return qf, true
}

var allowedOps = map[qkind][]string{
	kID:       {"=", "!=", ">", "<", ">=", "<=", "in", "not in"},
	kRecNo:    {"=", "!=", ">", "<", ">=", "<=", "in", "not in"},
	kUser:     {"in", "not in"},
	kDateTime: {"=", "!=", ">", "<", ">=", "<="},
	kText:     {"=", "!=", "in", "not in", "like", "not like"},
	kNumber:   {"=", "!=", ">", "<", ">=", "<=", "in", "not in"},
	kMText:    {"like", "not like", "is empty", "is not empty"},
	kChoice:   {"in", "not in"},
	kCheck:    {"in", "not in"},
	kFile:     {"like", "not like", "is empty", "is not empty"},
	kDate:     {"=", "!=", ">", "<", ">=", "<="},
}

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
	if !contains(allowedOps[f.kind], op) {
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

// resolveLiteral checks a literal against the field kind and expands date values to ranges.
func resolveLiteral(f *qfield, l *literal, now time.Time) *apiError {
	if l.function != "" {
		switch f.kind {
		case kUser:
			if l.function != "LOGINUSER" || len(l.args) != 0 {
				return errQuery("GAIA_IL08", "The function is invalid.")
			}
			l.s = adminCode
			return nil
		case kDateTime, kDate:
			lo, hi, aerr := dateFunction(l.function, l.args, now, f.kind == kDate)
			if aerr != nil {
				return aerr
			}
			l.isRange, l.lo, l.hi = true, lo, hi
			return nil
		}
		return errQuerySyntax()
	}
	switch f.kind {
	case kDateTime:
		if l.s == "" {
			return nil
		}
		if m := reDateOnly.FindStringSubmatch(l.s); m != nil {
			d, err := time.ParseInLocation("2006-1-2", l.s, jst)
			if err != nil {
				return errQuerySyntax()
			}
			l.isRange = true
			l.lo = d.UTC().Format(datetimeLayout)
			l.hi = d.AddDate(0, 0, 1).UTC().Format(datetimeLayout)
			return nil
		}
		t, ok := parseDateTime(l.s)
		if !ok {
			return errQuerySyntax()
		}
		l.isRange = true
		l.lo = t.Format(datetimeLayout)
		l.hi = t.Add(time.Minute).Format(datetimeLayout)
	case kDate:
		if l.s == "" {
			return nil
		}
		d, ok := normalizeDate(l.s)
		if !ok {
			return errQuerySyntax()
		}
		t, _ := time.Parse("2006-01-02", d)
		l.isRange, l.lo, l.hi = true, d, t.AddDate(0, 0, 1).Format("2006-01-02")
	case kChoice, kCheck:
		if l.s != "" && !contains(f.def.Options, l.s) {
			return errQuery("GAIA_IQ10", fmt.Sprintf("The value (%s) specified for the field (code: %s) is not one of the options.", l.s, f.code))
		}
	case kNumber, kID, kRecNo:
		if l.s == "" && (f.kind == kNumber) {
			return nil
		}
		if _, err := strconv.ParseFloat(l.s, 64); err != nil {
			return errQuerySyntax()
		}
	}
	return nil
}

// dateFunction expands a kintone date function into a [lo, hi) range in the stored layout.
func dateFunction(name string, args []string, now time.Time, dateOnly bool) (string, string, *apiError) {
	day := func(t time.Time) time.Time { y, m, d := t.In(jst).Date(); return time.Date(y, m, d, 0, 0, 0, 0, jst) }
	var lo, hi time.Time
	today := day(now)
	switch name {
	case "NOW":
		if dateOnly || len(args) != 0 {
			return "", "", errQuery("GAIA_IL08", "The function is invalid.")
		}
		t := now.UTC().Truncate(time.Minute)
		return t.Format(datetimeLayout), t.Add(time.Minute).Format(datetimeLayout), nil
	case "TODAY", "YESTERDAY", "TOMORROW":
		if len(args) != 0 {
			return "", "", errQuery("GAIA_IL08", "The function is invalid.")
		}
		lo = today.AddDate(0, 0, map[string]int{"TODAY": 0, "YESTERDAY": -1, "TOMORROW": 1}[name])
		hi = lo.AddDate(0, 0, 1)
	case "FROM_TODAY":
		if len(args) != 2 {
			return "", "", errQuery("GAIA_IL08", "The function is invalid.")
		}
		n, err := strconv.Atoi(args[0])
		if err != nil {
			return "", "", errQuery("GAIA_IQ23", "The argument of the function is invalid.")
		}
		switch strings.ToUpper(args[1]) {
		case "DAYS":
			lo = today.AddDate(0, 0, n)
		case "WEEKS":
			lo = today.AddDate(0, 0, 7*n)
		case "MONTHS":
			lo = today.AddDate(0, n, 0)
		case "YEARS":
			lo = today.AddDate(n, 0, 0)
		default:
			return "", "", errQuery("GAIA_IQ25", "The unit of the function is invalid.")
		}
		hi = lo.AddDate(0, 0, 1)
	case "THIS_MONTH", "LAST_MONTH", "NEXT_MONTH":
		if len(args) > 1 {
			return "", "", errQuery("GAIA_IL08", "The function is invalid.")
		}
		off := map[string]int{"THIS_MONTH": 0, "LAST_MONTH": -1, "NEXT_MONTH": 1}[name]
		first := time.Date(today.Year(), today.Month(), 1, 0, 0, 0, 0, jst).AddDate(0, off, 0)
		lo, hi = first, first.AddDate(0, 1, 0)
		if len(args) == 1 {
			last := hi.AddDate(0, 0, -1).Day()
			var d int
			if strings.EqualFold(args[0], "LAST") {
				d = last
			} else if v, err := strconv.Atoi(args[0]); err == nil && v >= 1 && v <= 31 {
				d = min(v, last)
			} else {
				return "", "", errQuery("GAIA_IQ23", "The argument of the function is invalid.")
			}
			lo = first.AddDate(0, 0, d-1)
			hi = lo.AddDate(0, 0, 1)
		}
	case "THIS_YEAR", "LAST_YEAR", "NEXT_YEAR":
		if len(args) != 0 {
			return "", "", errQuery("GAIA_IL08", "The function is invalid.")
		}
		off := map[string]int{"THIS_YEAR": 0, "LAST_YEAR": -1, "NEXT_YEAR": 1}[name]
		lo = time.Date(today.Year()+off, 1, 1, 0, 0, 0, 0, jst)
		hi = lo.AddDate(1, 0, 0)
	case "THIS_WEEK", "LAST_WEEK", "NEXT_WEEK":
		off := map[string]int{"THIS_WEEK": 0, "LAST_WEEK": -7, "NEXT_WEEK": 7}[name]
		sunday := today.AddDate(0, 0, -int(today.Weekday())+off)
		lo, hi = sunday, sunday.AddDate(0, 0, 7)
		if len(args) == 1 {
			wd := -1
			for i, n := range []string{"SUNDAY", "MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY"} {
				if strings.EqualFold(args[0], n) {
					wd = i
				}
			}
			if wd < 0 {
				return "", "", errQuery("GAIA_IQ23", "The argument of the function is invalid.")
			}
			lo = sunday.AddDate(0, 0, wd)
			hi = lo.AddDate(0, 0, 1)
		} else if len(args) > 1 {
			return "", "", errQuery("GAIA_IL08", "The function is invalid.")
		}
	default:
		return "", "", errQuery("GAIA_IL08", fmt.Sprintf("The function (%s) is invalid.", name))
	}
	if dateOnly {
		return lo.Format("2006-01-02"), hi.Format("2006-01-02"), nil
	}
	return lo.UTC().Format(datetimeLayout), hi.UTC().Format(datetimeLayout), nil
}

func compileCond(f *qfield, op string, vals []literal) (pred, *indexHint, *apiError) {
	switch f.kind {
	case kID, kRecNo:
		nums := make([]int64, 0, len(vals))
		floats := make([]float64, 0, len(vals))
		for _, v := range vals {
			x, _ := strconv.ParseFloat(v.s, 64)
			floats = append(floats, x)
			nums = append(nums, int64(x))
		}
		var hint *indexHint
		if op == "=" || op == "in" {
			hint = &indexHint{}
			for _, n := range nums {
				hint.values = append(hint.values, strconv.FormatInt(n, 10))
			}
		}
		return numPred(op, floats, func(r *record) (float64, bool) { return float64(r.id), true }), hint, nil
	case kNumber:
		var floats []float64
		hasEmpty := false
		for _, v := range vals {
			if v.s == "" {
				hasEmpty = true
				floats = append(floats, 0)
				continue
			}
			x, _ := strconv.ParseFloat(v.s, 64)
			floats = append(floats, x)
		}
		get := func(r *record) (float64, bool) {
			s, _ := f.get(r).(string)
			if s == "" {
				return 0, false
			}
			x, _ := strconv.ParseFloat(s, 64)
			return x, true
		}
		base := numPred(op, floats, get)
		if hasEmpty && (op == "in" || op == "not in" || op == "=" || op == "!=") {
			isE := func(r *record) bool { s, _ := f.get(r).(string); return s == "" }
			switch op {
			case "in", "=":
				return func(r *record) bool { return isE(r) || base(r) }, nil, nil
			default:
				return func(r *record) bool { return !isE(r) && base(r) }, nil, nil
			}
		}
		var hint *indexHint
		if f.def.Unique && (op == "=" || op == "in") && !hasEmpty {
			hint = &indexHint{code: f.code}
			for _, v := range vals {
				n, _ := normalizeNumber(v.s)
				hint.values = append(hint.values, n)
			}
		}
		return base, hint, nil
	case kText, kChoice, kUser:
		set := map[string]bool{}
		for _, v := range vals {
			set[v.s] = true
		}
		get := func(r *record) string { s, _ := f.get(r).(string); return s }
		var hint *indexHint
		if f.kind == kText && f.def.Unique && (op == "=" || op == "in") && !set[""] {
			hint = &indexHint{code: f.code}
			for _, v := range vals {
				hint.values = append(hint.values, v.s)
			}
		}
		switch op {
		case "=", "in":
			return func(r *record) bool { return set[get(r)] }, hint, nil
		case "!=", "not in":
			return func(r *record) bool { return !set[get(r)] }, nil, nil
		case "like":
			w := vals[0].s
			return func(r *record) bool { return likeMatch(get(r), w) }, nil, nil
		case "not like":
			w := vals[0].s
			return func(r *record) bool { return !likeMatch(get(r), w) }, nil, nil
		}
	case kMText:
		get := func(r *record) string { s, _ := f.get(r).(string); return s }
		switch op {
		case "like":
			w := vals[0].s
			return func(r *record) bool { return likeMatch(get(r), w) }, nil, nil
		case "not like":
			w := vals[0].s
			return func(r *record) bool { return !likeMatch(get(r), w) }, nil, nil
		case "is empty":
			return func(r *record) bool { return strings.TrimSpace(get(r)) == "" }, nil, nil
		case "is not empty":
			return func(r *record) bool { return strings.TrimSpace(get(r)) != "" }, nil, nil
		}
	case kCheck:
		set := map[string]bool{}
		for _, v := range vals {
			set[v.s] = true
		}
		any := func(r *record) bool {
			sel, _ := f.get(r).([]string)
			if len(sel) == 0 {
				return set[""]
			}
			for _, s := range sel {
				if set[s] {
					return true
				}
			}
			return false
		}
		if op == "in" {
			return any, nil, nil
		}
		return func(r *record) bool { return !any(r) }, nil, nil
	case kFile:
		names := func(r *record) string {
			fs, _ := f.get(r).([]fileVal)
			var parts []string
			for _, x := range fs {
				parts = append(parts, x.Name)
			}
			return strings.Join(parts, " ")
		}
		switch op {
		case "like":
			w := vals[0].s
			return func(r *record) bool { return likeMatch(names(r), w) }, nil, nil
		case "not like":
			w := vals[0].s
			return func(r *record) bool { return !likeMatch(names(r), w) }, nil, nil
		case "is empty":
			return func(r *record) bool { return names(r) == "" }, nil, nil
		case "is not empty":
			return func(r *record) bool { return names(r) != "" }, nil, nil
		}
	case kDateTime, kDate:
		l := vals[0]
		get := func(r *record) string { s, _ := f.get(r).(string); return s }
		if !l.isRange { // "" literal
			switch op {
			case "=":
				return func(r *record) bool { return get(r) == "" }, nil, nil
			case "!=":
				return func(r *record) bool { return get(r) != "" }, nil, nil
			}
			return func(*record) bool { return false }, nil, nil
		}
		lo, hi := l.lo, l.hi
		in := func(s string) bool { return s != "" && s >= lo && s < hi }
		switch op {
		case "=":
			return func(r *record) bool { return in(get(r)) }, nil, nil
		case "!=":
			return func(r *record) bool { return !in(get(r)) }, nil, nil
		case ">":
			return func(r *record) bool { s := get(r); return s != "" && s >= hi }, nil, nil
		case ">=":
			return func(r *record) bool { s := get(r); return s != "" && s >= lo }, nil, nil
		case "<":
			return func(r *record) bool { s := get(r); return s != "" && s < lo }, nil, nil
		case "<=":
			return func(r *record) bool { s := get(r); return s != "" && s < hi }, nil, nil
		}
	}
	return nil, nil, errQuerySyntax()
}

func numPred(op string, vals []float64, get func(*record) (float64, bool)) pred {
	has := func(x float64) bool {
		for _, v := range vals {
			if v == x {
				return true
			}
		}
		return false
	}
	v0 := vals[0]
	switch op {
	case "=", "in":
		return func(r *record) bool { x, ok := get(r); return ok && has(x) }
	case "!=", "not in":
		return func(r *record) bool { x, ok := get(r); return !ok || !has(x) }
	case ">":
		return func(r *record) bool { x, ok := get(r); return ok && x > v0 }
	case "<":
		return func(r *record) bool { x, ok := get(r); return ok && x < v0 }
	case ">=":
		return func(r *record) bool { x, ok := get(r); return ok && x >= v0 }
	case "<=":
		return func(r *record) bool { x, ok := get(r); return ok && x <= v0 }
	}
	return func(*record) bool { return false }
}

// likeMatch approximates kintone's full-text `like`: ASCII alphanumeric words of the search
// term must appear as whole words of the value (case-insensitive); other characters (Japanese)
// match as substrings. An empty term matches everything.
func likeMatch(value, term string) bool {
	value = strings.ToLower(value)
	term = strings.ToLower(strings.TrimSpace(term))
	if term == "" {
		return true
	}
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(value, func(r rune) bool { return !isASCIIAlnum(r) }) {
		words[w] = true
	}
	for _, part := range strings.Fields(term) {
		if isASCIIWord(part) {
			if !words[part] {
				return false
			}
			continue
		}
		if !strings.Contains(value, part) {
			return false
		}
	}
	return true
}

func isASCIIAlnum(r rune) bool {
	return r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

func isASCIIWord(s string) bool {
	for _, r := range s {
		if !isASCIIAlnum(r) {
			return false
		}
	}
	return true
}

// run evaluates q over a's records (caller holds a.mu for reading) and returns the page and
// the total match count.
func (q *query) run(a *app) (page []*record, total int) {
	var matched []*record
	if q.hint != nil {
		seen := map[int64]bool{}
		for _, v := range q.hint.values {
			var id int64
			var ok bool
			if q.hint.code == "" {
				n, err := strconv.ParseInt(v, 10, 64)
				id, ok = n, err == nil
			} else {
				id, ok = a.unique[q.hint.code][v]
			}
			if !ok || seen[id] {
				continue
			}
			seen[id] = true
			if r := a.records[id]; r != nil && (q.where == nil || q.where(r)) {
				matched = append(matched, r)
			}
		}
	} else {
		matched = make([]*record, 0, 64)
		for i := len(a.ids) - 1; i >= 0; i-- {
			r := a.records[a.ids[i]]
			if q.where == nil || q.where(r) {
				matched = append(matched, r)
			}
		}
	}
	sortRecords(matched, q.order)
	total = len(matched)
	if q.offset >= len(matched) {
		return nil, total
	}
	matched = matched[q.offset:]
	if len(matched) > q.limit {
		matched = matched[:q.limit]
	}
	return matched, total
}

func sortRecords(rs []*record, order []orderKey) {
	if len(order) == 0 {
		sort.Slice(rs, func(i, j int) bool { return rs[i].id > rs[j].id })
		return
	}
	sort.SliceStable(rs, func(i, j int) bool {
		for _, k := range order {
			c := compareField(k.f, rs[i], rs[j])
			if c == 0 {
				continue
			}
			if k.desc {
				return c > 0
			}
			return c < 0
		}
		return rs[i].id > rs[j].id
	})
}

func compareField(f *qfield, x, y *record) int {
	switch f.kind {
	case kID, kRecNo:
		return cmpInt(x.id, y.id)
	case kNumber:
		xs, _ := f.get(x).(string)
		ys, _ := f.get(y).(string)
		if xs == "" || ys == "" {
			return cmpBool(xs != "", ys != "")
		}
		xf, _ := strconv.ParseFloat(xs, 64)
		yf, _ := strconv.ParseFloat(ys, 64)
		switch {
		case xf < yf:
			return -1
		case xf > yf:
			return 1
		}
		return 0
	}
	xs, _ := f.get(x).(string)
	ys, _ := f.get(y).(string)
	return strings.Compare(xs, ys)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}
