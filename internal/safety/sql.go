package safety

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Statement kinds the SQL policy (rule 8) accepts.
const (
	StmtSelect     = "SELECT"
	StmtAssert     = "ASSERT"
	StmtCreateTemp = "CREATE TEMP TABLE AS SELECT"
	StmtImport     = "IMPORT INTO"
)

// SQLStatement is one classified statement of a fixture.
type SQLStatement struct {
	Index int // 1-based position in the file
	Line  int // line where the statement starts
	Kind  string
	// Refused is the reason the statement is not allowed ("" if allowed).
	Refused string
}

// writeKeywords may not appear anywhere in a statement (outside comments,
// string literals and quoted identifiers), whatever the leading keyword:
// dialects that allow statements without ';' could otherwise hide a write
// after a SELECT.
var writeKeywords = map[string]bool{
	"INSERT": true, "UPSERT": true, "UPDATE": true, "DELETE": true, "DROP": true,
	"TRUNCATE": true, "MERGE": true, "ALTER": true, "CREATE": true, "IMPORT": true,
	"GRANT": true, "REVOKE": true, "REPLACE": false, // REPLACE() is a string function
}

type tokKind int

const (
	tkWord tokKind = iota
	tkString
	tkQuoted
	tkPunct
	tkSemi
)

type token struct {
	kind tokKind
	text string
	line int
}

// lexSQL splits src into tokens. Comments and whitespace (including a BOM
// anywhere) are dropped. Anything the lexer cannot read unambiguously is an
// error, and the caller refuses the file: unterminated strings or comments,
// "/*" inside a block comment (nesting differs between dialects) and a
// backslash before a closing quote (backslash-escape dialects would read the
// string differently).
func lexSQL(src string) ([]token, error) {
	var toks []token
	line := 1
	i := 0
	for i < len(src) {
		r, size := utf8.DecodeRuneInString(src[i:])
		switch {
		case r == '\n':
			line++
			i += size
		case r == '\uFEFF' || unicode.IsSpace(r):
			i += size
		case strings.HasPrefix(src[i:], "--"):
			j := strings.IndexAny(src[i:], "\r\n")
			if j < 0 {
				i = len(src)
			} else {
				i += j
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("line %d: unterminated /* comment", line)
			}
			body := src[i+2 : i+2+end]
			if strings.Contains(body, "/*") {
				return nil, fmt.Errorf("line %d: nested /* inside a block comment is ambiguous", line)
			}
			line += strings.Count(body, "\n")
			i += 2 + end + 2
		case r == '\'' || r == '"' || r == '`':
			tok, next, endLine, err := lexQuoted(src, i, line, r)
			if err != nil {
				return nil, err
			}
			toks = append(toks, tok)
			i, line = next, endLine
		case r == ';':
			toks = append(toks, token{kind: tkSemi, text: ";", line: line})
			i += size
		case isWordRune(r):
			j := i
			for j < len(src) {
				r2, s2 := utf8.DecodeRuneInString(src[j:])
				if !isWordRune(r2) {
					break
				}
				j += s2
			}
			toks = append(toks, token{kind: tkWord, text: src[i:j], line: line})
			i = j
		default:
			toks = append(toks, token{kind: tkPunct, text: string(r), line: line})
			i += size
		}
	}
	return toks, nil
}

// lexQuoted reads the literal opened by the quote q at src[i] on line: a string for ',
// a quoted name for " and `. It returns the token, the index after the closing quote and the
// line the literal ends on.
func lexQuoted(src string, i, line int, q rune) (tok token, next, endLine int, err error) {
	start := line
	j := i + 1
	closed := false
	for j < len(src) {
		if src[j] == '\n' {
			line++
		}
		if src[j] == byte(q) {
			if j+1 < len(src) && src[j+1] == byte(q) {
				j += 2 // doubled quote = escaped quote
				continue
			}
			if src[j-1] == '\\' {
				return token{}, 0, 0, fmt.Errorf("line %d: backslash before a closing quote is ambiguous", start)
			}
			closed = true
			break
		}
		j++
	}
	if !closed {
		return token{}, 0, 0, fmt.Errorf("line %d: unterminated %c literal", start, q)
	}
	k := tkString
	if q != '\'' {
		k = tkQuoted
	}
	return token{kind: k, text: src[i+1 : j], line: start}, j + 1, line, nil
}

// isWordRune: '#' is a word character because kSQL temp tables are #name
// (so '#' never starts a comment here), '@' for @MONTH_START()-style macros.
func isWordRune(r rune) bool {
	return r == '_' || r == '#' || r == '@' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// asciiUpper upper-cases ASCII letters only: accepted keywords must be spelt
// in ASCII.
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// isWriteWord catches write keywords also in Unicode case variants
// ("ınsert" upper-cases to INSERT): fail closed.
func isWriteWord(w string) bool {
	return writeKeywords[asciiUpper(w)] || writeKeywords[strings.ToUpper(w)]
}

// ClassifySQL classifies every statement of a fixture SQL file. csvLogicalApp
// is the CSV fixture app's logical name; IMPORT INTO is allowed only into
// LAPP_<csvLogicalApp> (exact). An error means the file could not be read
// unambiguously and must be refused as a whole.
func ClassifySQL(src, csvLogicalApp string) ([]SQLStatement, error) {
	toks, err := lexSQL(src)
	if err != nil {
		return nil, err
	}
	var out []SQLStatement
	var cur []token
	flush := func() {
		if len(cur) > 0 {
			st := classifyStatement(cur, csvLogicalApp)
			st.Index = len(out) + 1
			out = append(out, st)
		}
		cur = nil
	}
	for _, t := range toks {
		if t.kind == tkSemi {
			flush()
			continue
		}
		cur = append(cur, t)
	}
	flush()
	if len(out) == 0 {
		return nil, fmt.Errorf("no SQL statement found")
	}
	return out, nil
}

func classifyStatement(toks []token, csvLogicalApp string) SQLStatement {
	st := SQLStatement{Line: toks[0].line}
	i := 0
	for i < len(toks) && toks[i].kind == tkPunct && toks[i].text == "(" {
		i++
	}
	if i >= len(toks) || toks[i].kind != tkWord {
		st.Refused = "unrecognised statement (does not start with a keyword)"
		return st
	}
	lead := wordAt(toks, i)
	intoAllowedAt := -1 // index of the INTO that names the IMPORT target
	switch {
	case lead == "SELECT":
		st.Kind = StmtSelect
	case lead == "ASSERT":
		st.Kind = StmtAssert
	case lead == "CREATE":
		k, refused := createTempSelect(toks, i)
		if refused != "" {
			st.Refused = refused
			return st
		}
		st.Kind = StmtCreateTemp
		i = k // CREATE itself is allowed here; scan the rest
	case lead == "IMPORT":
		if refused := importIntoCSVApp(toks, i, csvLogicalApp); refused != "" {
			st.Refused = refused
			return st
		}
		st.Kind = StmtImport
		intoAllowedAt = i + 1
		i += 2
	case isWriteWord(toks[i].text):
		st.Refused = fmt.Sprintf("%s writes data", strings.ToUpper(toks[i].text))
		return st
	default:
		st.Refused = fmt.Sprintf("unrecognised statement %q", toks[i].text)
		return st
	}
	if refused := writeInBody(toks, i+1, intoAllowedAt, st.Kind); refused != "" {
		st.Refused = refused
		st.Kind = ""
	}
	return st
}

// wordAt is the ASCII upper-cased word at toks[k], or "" when there is none.
func wordAt(toks []token, k int) string {
	if k < len(toks) && toks[k].kind == tkWord {
		return asciiUpper(toks[k].text)
	}
	return ""
}

// createTempSelect checks the CREATE at toks[i] is CREATE TEMP[ORARY] TABLE <name> AS
// [(…]SELECT and returns the index of that SELECT, or why it is refused.
func createTempSelect(toks []token, i int) (selectAt int, refused string) {
	k := i + 1
	if w := wordAt(toks, k); w != "TEMP" && w != "TEMPORARY" {
		if w == "TABLE" {
			return 0, "CREATE TABLE (not TEMP) creates a persistent table"
		}
		return 0, fmt.Sprintf("CREATE %s is not allowed (only CREATE TEMP TABLE … AS SELECT)", strings.TrimSpace(w))
	}
	k++
	if wordAt(toks, k) != "TABLE" {
		return 0, "CREATE TEMP must be followed by TABLE"
	}
	k++
	if k >= len(toks) || (toks[k].kind != tkWord && toks[k].kind != tkQuoted) {
		return 0, "CREATE TEMP TABLE without a table name"
	}
	k++
	if wordAt(toks, k) != "AS" {
		return 0, "CREATE TEMP TABLE must be … AS SELECT"
	}
	k++
	for k < len(toks) && toks[k].kind == tkPunct && toks[k].text == "(" {
		k++
	}
	if wordAt(toks, k) != "SELECT" {
		return 0, "CREATE TEMP TABLE must be … AS SELECT"
	}
	return k, ""
}

// importIntoCSVApp checks the IMPORT at toks[i] is IMPORT INTO LAPP_<csvLogicalApp>
// (exact), or says why it is refused.
func importIntoCSVApp(toks []token, i int, csvLogicalApp string) (refused string) {
	if wordAt(toks, i+1) != "INTO" {
		return "IMPORT must be IMPORT INTO the CSV fixture app"
	}
	target := ""
	if i+2 < len(toks) && toks[i+2].kind == tkWord {
		target = toks[i+2].text
	}
	want := "LAPP_" + csvLogicalApp
	if csvLogicalApp == "" || target != want {
		return fmt.Sprintf("IMPORT INTO %q: only the CSV fixture app %q may be imported into", target, want)
	}
	return ""
}

// writeInBody scans a statement of kind from toks[from] on for a write keyword or an INTO
// a non-temporary table (other than the IMPORT target's INTO at intoAllowedAt), and says
// why the statement is refused when it finds one.
func writeInBody(toks []token, from, intoAllowedAt int, kind string) (refused string) {
	for k := from; k < len(toks); k++ {
		t := toks[k]
		if t.kind != tkWord {
			continue
		}
		if isWriteWord(t.text) {
			return fmt.Sprintf("%s statement contains %s", kind, strings.ToUpper(t.text))
		}
		// SELECT … INTO <table> writes a table; only #temp targets (and the
		// IMPORT target) are allowed.
		if asciiUpper(t.text) == "INTO" && k != intoAllowedAt {
			if k+1 >= len(toks) || toks[k+1].kind != tkWord || !strings.HasPrefix(toks[k+1].text, "#") {
				return fmt.Sprintf("%s statement writes INTO a non-temporary table", kind)
			}
		}
	}
	return ""
}

var ksqlNameHeader = regexp.MustCompile(`(?m)^[ \t\x{FEFF}]*--[ \t]*@ksql[ \t]+name[ \t]*:[ \t]*(\S+)`)

// SQLJobName returns the job id declared by the `-- @ksql name:` header.
func SQLJobName(src string) string {
	m := ksqlNameHeader.FindStringSubmatch(src)
	if m == nil {
		return ""
	}
	return m[1]
}
