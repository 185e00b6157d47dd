package redact

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"strings"
	"unicode/utf8"
)

// encoding is one form a secret value may take in output.
type encoding struct {
	text string
	kind string // raw | url-encoded | base64 | json-escaped | xml-escaped
}

// minBase64Core is the shortest partial base64 run we look for. A secret embedded in a longer
// base64 string (e.g. "user:password" in a Basic header) has no fixed full encoding; only the
// characters that depend on secret bytes alone are stable, one run per alignment mod 3. Short
// runs would match unrelated base64 text, so secrets shorter than ~7 bytes only get their
// exact base64 forms.
const minBase64Core = 8

// encodings lists the forms of v that redaction replaces and verify looks for, the longest
// and most specific first. It covers: raw; URL-encoded (query and path escaping, strict
// RFC 3986, JavaScript encodeURIComponent, lower-case hex); base64 (std, URL, padded and raw,
// plus the alignment-independent cores for embedding in longer base64); JSON-escaped (Go with
// and without HTML escaping, ASCII-only \u escaping, escaped slashes, and escaped twice for
// JSON held in a JSON string) of all of the above; XML/HTML-escaped.
func encodings(v string) []encoding {
	if v == "" {
		return nil
	}
	var out []encoding
	seen := map[string]bool{}
	add := func(text, kind string) {
		if text == "" || seen[text] {
			return
		}
		seen[text] = true
		out = append(out, encoding{text, kind})
	}
	base := []encoding{{v, "raw"}}
	for _, u := range urlForms(v) {
		base = append(base, encoding{u, "url-encoded"})
	}
	for _, b := range base64Forms(v) {
		base = append(base, encoding{b, "base64"})
	}
	for _, b := range base {
		add(b.text, b.kind)
		for _, j := range jsonForms(b.text) {
			k := "json-escaped"
			if b.kind != "raw" {
				k = b.kind + ", json-escaped"
			}
			add(j, k)
		}
	}
	add(html.EscapeString(v), "xml-escaped")
	add(xmlEscape(v), "xml-escaped")
	return out
}

func urlForms(v string) []string {
	var forms []string
	for _, keep := range []string{"", "-_.~", "-_.~!'()*", "-_.~$&+,;=:@", "-_.~!$&'()*+,;=:@/"} {
		var b strings.Builder
		for i := 0; i < len(v); i++ {
			c := v[i]
			if isAlnum(c) || strings.IndexByte(keep, c) >= 0 {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		}
		forms = append(forms, b.String())
	}
	// Query escaping writes a space as "+".
	forms = append(forms, strings.ReplaceAll(forms[1], "%20", "+"))
	n := len(forms)
	for _, f := range forms[:n] {
		forms = append(forms, lowerHexEscapes(f))
	}
	return forms
}

func lowerHexEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1] = lowerHex(b[i+1])
			b[i+2] = lowerHex(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func lowerHex(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + ('a' - 'A')
	}
	return c
}

func base64Forms(v string) []string {
	encs := []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding}
	var forms []string
	for _, e := range encs {
		forms = append(forms, e.EncodeToString([]byte(v)))
	}
	n := len(v)
	for _, e := range encs[:2] {
		for k := 0; k < 3; k++ {
			buf := make([]byte, k+n+3)
			copy(buf[k:], v)
			enc := e.EncodeToString(buf)
			first := (8*k + 5) / 6    // first char whose 6 bits all come from the secret
			last := (8 * (k + n)) / 6 // one past the last such char
			if last-first >= minBase64Core {
				forms = append(forms, enc[first:last])
			}
		}
	}
	return forms
}

// jsonForms lists how s looks inside a JSON string literal written by common encoders.
func jsonForms(s string) []string {
	goHTML, _ := json.Marshal(s)
	forms := []string{
		string(goHTML[1 : len(goHTML)-1]),
		jsonEscape(s, false, false),
		jsonEscape(s, true, false),
		jsonEscape(s, false, true),
	}
	// JSON inside a JSON string (a stdout line of JSON stored in a field) is escaped twice.
	forms = append(forms, jsonEscape(jsonEscape(s, false, false), false, false))
	return forms
}

// jsonEscape escapes s for a JSON string literal; ascii escapes every non-ASCII rune as \uXXXX
// (Python's default), slash escapes "/" (PHP's default).
func jsonEscape(s string, ascii, slash bool) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '/' && slash:
			b.WriteString(`\/`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		case ascii && r > 0x7e:
			if r >= 0x10000 {
				r -= 0x10000
				fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// xmlEscape mirrors encoding/xml's EscapeText.
func xmlEscape(s string) string {
	r := strings.NewReplacer(`"`, "&#34;", "'", "&#39;", "&", "&amp;", "<", "&lt;", ">", "&gt;",
		"\t", "&#x9;", "\n", "&#xA;", "\r", "&#xD;")
	return r.Replace(s)
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
