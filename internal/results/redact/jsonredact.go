package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// JSON redacts a JSON document (or a stream of them) token by token and re-emits it indented,
// keeping key order. Working on decoded values catches every escaping of a secret, keeps the
// document valid, and knows the key each value sits under:
//
//   - a value (string or number) under a key named like an app that equals a known app id
//     becomes the string "app:<role>";
//   - a request reason body — a string under a key "reason", or the "value" of a kintone field
//     "reason" ({"reason":{"type":…,"value":…}}) — becomes Reason(body);
//   - every string or number under a key naming a credential (…token, …secret, …password,
//     authorization, cookie, api key) becomes "[REDACTED:<KEY>]", whatever its value (tokens
//     captured at run time are not in the environment);
//   - every other string, and every key, goes through String (a replacement stays inside
//     its string); numbers, literals and the structure are never rewritten otherwise.
//
// Input that is not JSON is an error.
func (r *Redactor) JSON(data []byte) ([]byte, error) { return r.jsonDoc(data, true) }

// JSONText redacts a JSON document whose keys are flowtest's own (an exploration's report,
// where "reason" is a scenario's failure, not a request reason body): every key and string
// goes through String, and no rule looks at the key a value sits under. The document stays
// valid and keeps its key order; it is re-emitted indented.
func (r *Redactor) JSONText(data []byte) ([]byte, error) {
	w := &jsonWriter{r: r, indent: true, textOnly: true}
	return r.writeJSON(data, w)
}

// NDJSON redacts newline-delimited JSON (a Cucumber Messages stream) line by line, each line
// a document under JSON's rules, kept on one line: Bytes would take the stream for one JSON
// text and indent it, and a line-oriented reader could no longer read it. A line that is not
// JSON is an error naming it; empty lines are kept.
func (r *Redactor) NDJSON(data []byte) ([]byte, error) {
	out := make([]byte, 0, len(data))
	n := 0
	for line := range bytes.Lines(data) {
		n++
		body := bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(body)) == 0 {
			out = append(out, line...)
			continue
		}
		red, err := r.jsonDoc(body, false)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, bytes.TrimSuffix(red, []byte("\n"))...)
		out = append(out, line[len(body):]...)
	}
	return out, nil
}

func (r *Redactor) jsonDoc(data []byte, indent bool) ([]byte, error) {
	return r.writeJSON(data, &jsonWriter{r: r, indent: indent})
}

func (r *Redactor) writeJSON(data []byte, w *jsonWriter) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("redact json: %w", err)
		}
		w.token(tok)
	}
	if len(w.stack) != 0 {
		return nil, errors.New("redact json: truncated document")
	}
	if w.topLevel == 0 {
		return nil, errors.New("redact json: empty document")
	}
	w.buf.WriteByte('\n')
	// No byte-level pass over the whole document: every key and string went through String
	// above, and a rule applied to the document's bytes could rewrite a number, a literal or
	// a key's quotes and leave it invalid.
	return w.buf.Bytes(), nil
}

type jsonFrame struct {
	obj       bool
	n         int    // elements written
	name      string // key this container sits under
	key       string // current key (objects)
	expectKey bool
	sensitive string // credential key above us, if any
}

type jsonWriter struct {
	r        *Redactor
	indent   bool
	textOnly bool // JSONText: no rule by key
	buf      bytes.Buffer
	stack    []*jsonFrame
	topLevel int
}

func (w *jsonWriter) top() *jsonFrame {
	if len(w.stack) == 0 {
		return nil
	}
	return w.stack[len(w.stack)-1]
}

func (w *jsonWriter) newline() {
	if !w.indent {
		return
	}
	w.buf.WriteByte('\n')
	w.buf.WriteString(strings.Repeat("  ", len(w.stack)))
}

// beforeValue writes the separator a value needs and returns the key context it sits under.
func (w *jsonWriter) beforeValue() (key, parent, sensitive string) {
	f := w.top()
	switch {
	case f == nil:
		if w.topLevel > 0 {
			w.buf.WriteByte('\n')
		}
		w.topLevel++
		return "", "", ""
	case f.obj:
		f.expectKey = true
		return f.key, f.name, f.sensitive
	default:
		if f.n > 0 {
			w.buf.WriteByte(',')
		}
		f.n++
		w.newline()
		// Array elements inherit the array's key: "apps": ["7"] are app ids too.
		return f.name, "", f.sensitive
	}
}

func (w *jsonWriter) token(tok json.Token) {
	f := w.top()
	if f != nil && f.obj && f.expectKey {
		if d, ok := tok.(json.Delim); ok && d == '}' {
			w.close('}')
			return
		}
		key, _ := tok.(string)
		if f.n > 0 {
			w.buf.WriteByte(',')
		}
		f.n++
		w.newline()
		writeJSONString(&w.buf, w.r.String(key))
		w.buf.WriteByte(':')
		if w.indent {
			w.buf.WriteByte(' ')
		}
		f.key = key
		f.expectKey = false
		return
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '}' || t == ']' {
			w.close(byte(t))
			return
		}
		key, _, sensitive := w.beforeValue()
		if sensitive == "" && isSensitiveKey(key) {
			sensitive = key
		}
		w.buf.WriteByte(byte(t))
		w.stack = append(w.stack, &jsonFrame{obj: t == '{', name: key, expectKey: t == '{', sensitive: sensitive})
	case string:
		key, parent, sensitive := w.beforeValue()
		writeJSONString(&w.buf, w.redactValue(t, key, parent, sensitive))
	case json.Number:
		key, parent, sensitive := w.beforeValue()
		s := string(t)
		red := w.redactValue(s, key, parent, sensitive)
		if red == s {
			w.buf.WriteString(s)
		} else {
			writeJSONString(&w.buf, red)
		}
	case bool:
		w.beforeValue()
		fmt.Fprint(&w.buf, t)
	case nil:
		w.beforeValue()
		w.buf.WriteString("null")
	}
}

func (w *jsonWriter) close(d byte) {
	f := w.top()
	w.stack = w.stack[:len(w.stack)-1]
	if f.n > 0 {
		w.newline()
	}
	w.buf.WriteByte(d)
}

func (w *jsonWriter) redactValue(v, key, parent, sensitive string) string {
	if w.textOnly {
		return w.r.String(v)
	}
	if sensitive == "" && isSensitiveKey(key) {
		sensitive = key
	}
	if sensitive != "" {
		if v == "" || strings.HasPrefix(v, "[REDACTED:") {
			return v
		}
		return "[REDACTED:" + sanitizeName(strings.ToUpper(sensitive), "SECRET") + "]"
	}
	if isReasonKey(key) || (strings.EqualFold(key, "value") && isReasonKey(parent)) {
		if strings.HasPrefix(v, "[REDACTED:") {
			return v
		}
		return w.r.Reason(v)
	}
	if isAppKey(key) {
		if role, ok := w.r.apps[strings.TrimSpace(v)]; ok {
			return "app:" + role
		}
	}
	return w.r.String(v)
}

// isReasonKey: reason, release_reason, … hold request reason bodies; status_reason holds the
// product's result codes (evidence) and our own not-run reasons, so it is kept.
func isReasonKey(k string) bool {
	n := normKey(k)
	return strings.HasSuffix(n, "reason") && n != "statusreason"
}

// writeJSONString writes s as a JSON string without HTML escaping (the files are read by
// people; '<' and '&' are common in assertions).
func writeJSONString(b *bytes.Buffer, s string) {
	var tmp bytes.Buffer
	enc := json.NewEncoder(&tmp)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Write(bytes.TrimSuffix(tmp.Bytes(), []byte("\n")))
}
