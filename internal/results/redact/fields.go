package redact

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// Strings redacts each string of in (nil stays nil: an absent list stays absent in JSON).
func (r *Redactor) Strings(in []string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = r.String(s)
	}
	return out
}

// StringMap redacts keys and values of a record's fact map; a value under a credential key
// becomes a placeholder and an app id under an app key its role, whatever the text rules find.
func (r *Redactor) StringMap(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		if isSensitiveKey(k) && v != "" {
			v = "[REDACTED:" + sanitizeName(strings.ToUpper(k), "SECRET") + "]"
		} else if role, ok := r.apps[strings.TrimSpace(v)]; ok && isAppKey(k) {
			v = "app:" + role
		}
		out[r.String(k)] = r.String(v)
	}
	return out
}

// Tail redacts a child's output and keeps at most max bytes of its end. The head of s is
// checked for the end of a secret (s may already be a tail cut in the middle of one), and the
// cut never splits a placeholder or a UTF-8 sequence.
func (r *Redactor) Tail(s string, max int) string {
	if s == "" {
		return s
	}
	s = r.cutSecretHead(s)
	s = r.String(s)
	if len(s) <= max {
		return s
	}
	cut := len(s) - max
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	// If the cut falls inside "[REDACTED:…]", move it past the placeholder.
	if open := strings.LastIndex(s[:cut], "[REDACTED:"); open >= 0 {
		if close := strings.IndexByte(s[open:], ']'); close >= 0 && open+close >= cut {
			cut = open + close + 1
		}
	}
	return s[cut:]
}

// cutSecretHead replaces a prefix of s that is the last ≥4 bytes of a secret encoding of at
// least 8 bytes.
func (r *Redactor) cutSecretHead(s string) string {
	if len(s) < 4 {
		return s
	}
	best, repl := 0, ""
	sb := []byte(s)
	for _, p := range r.m.patterns() {
		if len(p.text) < 8 {
			continue
		}
		// The longest head s[:k] (4 ≤ k < len) that is p's last k bytes: the first i ≥ 1 with
		// p.text[i] == s[0] (IndexByte) whose tail s starts with.
		t := p.text
		for i := 1; i <= len(t)-4 && len(t)-i > best; i++ {
			j := bytes.IndexByte(t[i:len(t)-3], sb[0])
			if j < 0 {
				break
			}
			i += j
			if len(t)-i > best && bytes.HasPrefix(sb, t[i:]) {
				best, repl = len(t)-i, p.repl
				break
			}
		}
	}
	if best == 0 {
		return s
	}
	return repl + s[best:]
}
