package emulator

import (
	"strconv"
	"strings"
	"unicode"
)

// Query evaluation: a condition compiled to a predicate over records (plus an index hint).

// compileCond compiles one condition to a predicate over records, plus an index hint where
// the field is unique (or the id) and the operator = or in.
func compileCond(f *qfield, op string, vals []literal) (pred, *indexHint, *apiError) {
	switch f.kind {
	case kID, kRecNo:
		return idCond(op, vals)
	case kNumber:
		return numberCond(f, op, vals)
	case kText, kChoice, kUser:
		return textCond(f, op, vals)
	case kMText:
		if p := textPred(op, vals, func(r *record) string { s, _ := f.get(r).(string); return s }); p != nil {
			return p, nil, nil
		}
	case kCheck:
		return checkCond(f, op, vals)
	case kFile:
		// A FILE field is searched by its file names.
		names := func(r *record) string {
			fs, _ := f.get(r).([]fileVal)
			var parts []string
			for _, x := range fs {
				parts = append(parts, x.Name)
			}
			return strings.Join(parts, " ")
		}
		if p := textPred(op, vals, names); p != nil {
			return p, nil, nil
		}
	case kDateTime, kDate:
		return dateCond(f, op, vals)
	}
	return nil, nil, errQuerySyntax()
}

// idCond compares $id or the record number; = and in give the id index.
func idCond(op string, vals []literal) (pred, *indexHint, *apiError) {
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
}

// numberCond compares a NUMBER field, where "" matches the empty value; = and in on a
// unique field give its index.
func numberCond(f *qfield, op string, vals []literal) (pred, *indexHint, *apiError) {
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
}

// textCond compares a text, choice or user field; a non-unique text field matches = and
// in by tokens, as kintone's search does.
func textCond(f *qfield, op string, vals []literal) (pred, *indexHint, *apiError) {
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
	if f.kind == kText && !f.def.Unique {
		// kintone searches a non-unique text field through its token index, so = and
		// in also return values that merely contain the term's tokens (see tokenTerm).
		terms := make([]tokenTerm, len(vals))
		for i, v := range vals {
			terms[i] = newTokenTerm(v.s)
		}
		hit := func(r *record) bool {
			s := get(r)
			for i := range terms {
				if terms[i].matches(s) {
					return true
				}
			}
			return false
		}
		switch op {
		case "=", "in":
			return hit, nil, nil
		case "!=", "not in":
			return func(r *record) bool { return !hit(r) }, nil, nil
		}
	}
	switch op {
	case "=", "in":
		return func(r *record) bool { return set[get(r)] }, hint, nil
	case "!=", "not in":
		return func(r *record) bool { return !set[get(r)] }, nil, nil
	}
	if p := textPred(op, vals, get); p != nil {
		return p, nil, nil
	}
	return nil, nil, errQuerySyntax()
}

// checkCond is in / not in over a check box's selected options ("" = none selected).
func checkCond(f *qfield, op string, vals []literal) (pred, *indexHint, *apiError) {
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
}

// dateCond compares a date or datetime field with a literal read as a range [lo, hi); the
// "" literal matches only the empty value.
func dateCond(f *qfield, op string, vals []literal) (pred, *indexHint, *apiError) {
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
	return nil, nil, errQuerySyntax()
}

// textPred is like / not like / is empty / is not empty over a text form of the field
// (whitespace-only counts as empty); nil for any other operator.
func textPred(op string, vals []literal, get func(*record) string) pred {
	switch op {
	case "like":
		w := vals[0].s
		return func(r *record) bool { return likeMatch(get(r), w) }
	case "not like":
		w := vals[0].s
		return func(r *record) bool { return !likeMatch(get(r), w) }
	case "is empty":
		return func(r *record) bool { return strings.TrimSpace(get(r)) == "" }
	case "is not empty":
		return func(r *record) bool { return strings.TrimSpace(get(r)) != "" }
	}
	return nil
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

// tokenTerm is a search term of = / in on a non-unique SINGLE_LINE_TEXT field. Real kintone
// answers those from its search index, not by string equality (recorded by the product's
// authors: "kintone = on non-unique single-line text is token matching"), so a value matches
// when it equals the term exactly or when the term's tokens appear as a contiguous run of
// the value's tokens. Tokens are maximal runs of letters and digits (any script); every
// other character (_ - space . : / @ and the like, U+3000 included) only separates them.
// Letters compare case-insensitively for ASCII. A term without tokens ("" or only
// separators) matches exactly only, so `= ""` keeps finding the empty values.
// Consequence: `run_id = "k"` also returns "k_trial2" and "x-k", never "kx" or "k2".
type tokenTerm struct {
	exact  string
	tokens []string
}

func newTokenTerm(s string) tokenTerm { return tokenTerm{exact: s, tokens: textTokens(s)} }

func (t *tokenTerm) matches(value string) bool {
	if value == t.exact {
		return true
	}
	n := len(t.tokens)
	if n == 0 || len(value) < len(t.tokens[0]) {
		return false
	}
	vt := textTokens(value)
	for i := 0; i+n <= len(vt); i++ {
		j := 0
		for j < n && asciiEqualFold(vt[i+j], t.tokens[j]) {
			j++
		}
		if j == n {
			return true
		}
	}
	return false
}

// textTokens splits s into its tokens (see tokenTerm).
func textTokens(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// asciiEqualFold compares a and b ignoring the case of ASCII letters only (kintone's index
// folds ASCII case; other scripts are compared as they are).
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
