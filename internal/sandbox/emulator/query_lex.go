package emulator

import (
	"strings"
)

// Query lexer: kintone query text to tokens (string escapes, operators, words).

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
