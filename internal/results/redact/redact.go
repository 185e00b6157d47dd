package redact

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
)

// SecretsFromEnv picks the variables whose name contains TOKEN, SECRET or PASSWORD
// (case-insensitive) and whose value is not empty. An empty value is ignored rather than
// matched (it would match everywhere).
func SecretsFromEnv(env map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		u := strings.ToUpper(k)
		if v != "" && (strings.Contains(u, "TOKEN") || strings.Contains(u, "SECRET") || strings.Contains(u, "PASSWORD")) {
			out[k] = v
		}
	}
	return out
}

// Redactor rewrites text so that it holds no secret value (in any of the encodings of
// encodings()), no registered request reason body and no real app id in an app position
// (see appHits). It is safe for concurrent use: adding a secret or a reason costs that value's
// own encodings (see matcher), so registering the tokens of one more scenario never waits on
// — nor makes wait — the redaction of every other scenario's output.
type Redactor struct {
	mu      sync.Mutex // guards secrets and reasons (Warnings, Secrets)
	secrets map[string]string
	skipped map[string]string // name -> why its value is not a secret (NotSecret)
	reasons map[string]bool
	apps    map[string]string // app id -> role
	idLens  [32]bool          // lengths of app ids, to skip most digit runs cheaply
	m       *matcher
}

// New builds a redactor for secrets (env name -> value) and apps (app id -> role, e.g.
// "4257" -> "state"). Empty app ids, and secret values that are empty or that NotSecret
// rejects, are ignored.
func New(secrets map[string]string, apps map[string]string) *Redactor {
	r := &Redactor{secrets: map[string]string{}, skipped: map[string]string{}, reasons: map[string]bool{}, apps: map[string]string{},
		m: (&matcher{}).withHints()}
	for id, role := range apps {
		id = strings.TrimSpace(id)
		if id == "" || !allDigits(id) || len(id) >= len(r.idLens) {
			continue // kintone app ids are positive integers; anything else cannot be located safely
		}
		r.apps[id] = sanitizeName(role, "app")
		r.idLens[len(id)] = true
	}
	r.AddSecrets(secrets)
	return r
}

// AddSecret registers a value captured at run time (e.g. a token a scenario generated) as
// if it came from the environment under name. It is redacted everywhere once AddSecret
// returns.
func (r *Redactor) AddSecret(name, value string) {
	r.AddSecrets(map[string]string{name: value})
}

// AddSecrets registers several secrets (name -> value) at once; empty values are ignored, and
// so is a value NotSecret rejects (Warnings names it).
func (r *Redactor) AddSecrets(secrets map[string]string) {
	kept, skipped := keepSecrets(secrets)
	var pats []pattern
	r.mu.Lock()
	for name, why := range skipped {
		r.skipped[name] = why
	}
	for name, v := range kept {
		r.secrets[name] = v
		delete(r.skipped, name)
		pats = append(pats, secretValuePatterns(name, v)...)
	}
	r.mu.Unlock()
	r.m.add(pats)
}

// AddReason registers a request reason body the harness wrote, so that it is replaced by
// Reason(body) wherever it shows up (CLI output, decoded records, logs).
func (r *Redactor) AddReason(body string) {
	if body == "" {
		return
	}
	r.mu.Lock()
	r.reasons[body] = true
	r.mu.Unlock()
	r.m.add(reasonPatterns(body))
}

// Reason returns what is stored instead of a request reason body: "" when there was none,
// otherwise a placeholder holding the first 12 hex digits of its SHA-256 (enough to tell two
// reasons apart and to check one against a known text, not to read it).
func (r *Redactor) Reason(body string) string { return reasonPlaceholder(body) }

func reasonPlaceholder(body string) string {
	if body == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(body))
	return "[REDACTED:REASON sha256:" + hex.EncodeToString(sum[:6]) + "]"
}

// Roles returns the app id -> role map in use.
func (r *Redactor) Roles() map[string]string {
	return maps.Clone(r.apps)
}

// Warnings names, in order, each variable registered as a secret whose value NotSecret
// rejected, and why; never the value.
func (r *Redactor) Warnings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var w []string
	for _, name := range slices.Sorted(maps.Keys(r.skipped)) {
		w = append(w, name+" is not treated as a secret (its value is "+r.skipped[name]+"; "+SecretRule+"): it is not redacted")
	}
	return w
}

// secretValuePatterns are the patterns of one secret: every encoding, labelled by its name.
// Two names with the same value keep the label of the name that sorts first.
func secretValuePatterns(name, value string) []pattern {
	repl := "[REDACTED:" + sanitizeName(name, "SECRET") + "]"
	var pats []pattern
	for _, e := range encodings(value) {
		pats = append(pats, pattern{text: []byte(e.text), repl: repl, kind: "secret " + name + " (" + e.kind + ")", rank: "0" + name})
	}
	return pats
}

// reasonPatterns are the patterns of one request reason body (a secret with the same text
// keeps its own label).
func reasonPatterns(body string) []pattern {
	repl := reasonPlaceholder(body)
	var pats []pattern
	for _, e := range encodings(body) {
		pats = append(pats, pattern{text: []byte(e.text), repl: repl, kind: "request reason (" + e.kind + ")", rank: "1"})
	}
	return pats
}

// secretPatterns are the patterns of every secret (name -> value), for a matcher of its own
// (the archive's leak scan).
func secretPatterns(secrets map[string]string) []pattern {
	var pats []pattern
	for name, v := range secrets {
		pats = append(pats, secretValuePatterns(name, v)...)
	}
	return pats
}

// hintPatterns are the key words (in their common casings) that make the JSON-in-text pass
// worth running: request reasons and credential keys. Lower-case, Title-case and UPPER-case
// forms of: reason, token, secret, passw, authoriz, cookie, apikey/api_key/api-key/apiKey.
var hintPatterns = func() []pattern {
	var pats []pattern
	for _, w := range []string{"reason", "token", "secret", "passw", "authoriz", "cookie", "apikey", "api_key", "api-key"} {
		for _, v := range []string{w, strings.ToUpper(w[:1]) + w[1:], strings.ToUpper(w)} {
			pats = append(pats, pattern{text: []byte(v), hint: true})
		}
	}
	return append(pats, pattern{text: []byte("apiKey"), hint: true}, pattern{text: []byte("ApiKey"), hint: true})
}()

// String redacts s.
func (r *Redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	return string(r.Bytes([]byte(s)))
}

// Bytes redacts b: secret values and registered reasons in every encoding (also inside JSON
// string literals that spell characters as \uXXXX), then app ids in app positions. It never
// modifies b; when nothing needs redaction it may return b itself.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil || len(b) == 0 {
		return b
	}
	// One pass finds the secrets and whether a reason/credential key word occurs; only then is
	// the (slower) JSON-in-text pass needed, after which the text is scanned again.
	m := r.m
	spans, hint := m.scanHint(b)
	if hint {
		if j := r.jsonInText(b); !bytes.Equal(j, b) {
			return r.text(j)
		}
	}
	return r.textSpans(b, m, spans)
}

// jsonInText gives JSON held in text (a child's --json output, a JSON log line) the key-aware
// treatment of JSON: the whole text if it is one JSON document, else each line that is. Text
// that is not JSON is returned as is; a document cut in the middle (a tail) falls back to the
// text rules, which is why the harness registers the reasons it writes with AddReason.
func (r *Redactor) jsonInText(b []byte) []byte {
	if !hasKeyHint(b) {
		return b
	}
	first := bytes.TrimLeft(b, " \t\r\n")
	if len(first) > 0 && (first[0] == '{' || first[0] == '[') {
		// A stream of documents (NDJSON, godog's events) stays one document a line.
		indent := bytes.Contains(bytes.TrimSpace(b), []byte("\n")) && !jsonStream(b)
		if out, err := r.jsonDoc(b, indent); err == nil {
			if !bytes.HasSuffix(b, []byte("\n")) {
				out = bytes.TrimSuffix(out, []byte("\n"))
			}
			return out
		}
	}
	if !bytes.Contains(b, []byte("\n{")) && !bytes.Contains(b, []byte("\n[")) {
		return b
	}
	var out []byte
	changed := false
	for line := range bytes.Lines(b) {
		t := bytes.TrimLeft(line, " \t")
		if len(t) > 1 && (t[0] == '{' || t[0] == '[') && hasKeyHint(t) {
			body := bytes.TrimRight(line, "\r\n")
			if red, err := r.jsonDoc(body, false); err == nil {
				out = append(out, bytes.TrimSuffix(red, []byte("\n"))...)
				out = append(out, line[len(body):]...)
				changed = true
				continue
			}
		}
		out = append(out, line...)
	}
	if !changed {
		return b
	}
	return out
}

// jsonStream reports whether b is more than one JSON document in a row.
func jsonStream(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	var v json.RawMessage
	return dec.Decode(&v) == nil && dec.More()
}

// text applies the byte-level rules: secrets and registered reasons in every encoding, then
// \u-spelled literals, then app ids in app positions.
func (r *Redactor) text(b []byte) []byte {
	return r.textSpans(b, r.m, r.m.scan(b))
}

func (r *Redactor) textSpans(b []byte, m *matcher, spans []span) []byte {
	out := m.replace(b, spans)
	out = redactEscapedLiterals(out, m)
	if len(r.apps) > 0 {
		out = r.replaceApps(out)
	}
	return out
}

// redactEscapedLiterals handles the one JSON spelling the pattern list cannot enumerate: any
// character written as \uXXXX. Each double-quoted literal containing "\u" is decoded; if the
// decoded text holds a pattern, the literal is re-encoded from the redacted text.
func redactEscapedLiterals(b []byte, m *matcher) []byte {
	if m.empty() || !bytes.Contains(b, []byte(`\u`)) {
		return b
	}
	var out []byte
	prev := 0
	forEachEscapedLiteral(b, func(start, end int, decoded string) {
		sp := m.scan([]byte(decoded))
		if len(sp) == 0 {
			return
		}
		enc, err := json.Marshal(string(m.replace([]byte(decoded), sp)))
		if err != nil {
			return
		}
		// Keep the literal's own escaping level: a literal that was itself inside a JSON
		// string (\"…\") stays escaped.
		inner := enc[1 : len(enc)-1]
		out = append(out, b[prev:start]...)
		out = append(out, inner...)
		prev = end
	})
	if out == nil {
		return b
	}
	return append(out, b[prev:]...)
}

// forEachEscapedLiteral calls fn with the content range [start,end) (between the quotes) and
// decoded text of every "…" literal on one line that contains a \u escape and decodes as JSON.
func forEachEscapedLiteral(b []byte, fn func(start, end int, decoded string)) {
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		j := i + 1
		hasU := false
		for ; j < len(b) && b[j] != '"' && b[j] != '\n'; j++ {
			if b[j] == '\\' && j+1 < len(b) {
				if b[j+1] == 'u' {
					hasU = true
				}
				j++
			}
		}
		if j >= len(b) || b[j] != '"' {
			i = j
			continue
		}
		if hasU {
			var s string
			if json.Unmarshal(b[i:j+1], &s) == nil {
				fn(i+1, j, s)
			}
		}
		i = j
	}
}

// Argv redacts an argument vector. Besides String on each element, the value after a flag
// naming an app (--app, --app-id, --state-app-id …) is treated as an app field, and the value
// after a flag naming a token, secret or password is replaced outright (it may be a token
// captured at run time that is not in the environment).
func (r *Redactor) Argv(argv []string) []string {
	out := r.Strings(argv)
	for i, a := range argv {
		if i == 0 {
			continue
		}
		flag := strings.TrimLeft(argv[i-1], "-")
		if !strings.HasPrefix(argv[i-1], "-") || strings.Contains(argv[i-1], "=") {
			continue
		}
		if isSensitiveKey(flag) && a != "" && !strings.HasPrefix(out[i], "[REDACTED:") {
			out[i] = "[REDACTED:" + sanitizeName(strings.ToUpper(flag), "FLAG") + "]"
		} else if isAppKey(flag) {
			if role, ok := r.apps[strings.TrimSpace(a)]; ok {
				out[i] = "app:" + role
			}
		}
	}
	return out
}

// appHit is an app id found in an app position.
type appHit struct {
	start, end int
	id         string
	quote      string // quote to put around the role when the id was a bare JSON number
	form       string // which rule matched, for leak reports
}

// replaceApps rewrites the app ids appHits finds to "app:<role>".
func (r *Redactor) replaceApps(b []byte) []byte {
	hits := appHits(b, r.apps, &r.idLens)
	if len(hits) == 0 {
		return b
	}
	out := make([]byte, 0, len(b)+16*len(hits))
	prev := 0
	for _, h := range hits {
		out = append(out, b[prev:h.start]...)
		out = append(out, h.quote...)
		out = append(out, "app:"+r.apps[h.id]...)
		out = append(out, h.quote...)
		prev = h.end
	}
	return append(out, b[prev:]...)
}

// appHits finds app ids where they are app ids, and nowhere else, so that an app id "7" never
// rewrites "17", a duration of 7 ms or a revision 7. A digit run equal to a known id (and not
// followed by a letter, digit or '_') counts only when it is:
//
//   - the value of a key named like an app: key ∈ {app, …_app, appId, app_id, …_APP_ID, …}
//     (case-insensitive, '_', '-', '.' ignored, the last dotted segment counts), separated by
//     '=', ':' or URL-encoded '%3D', optionally quoted ("app":"7", "app": 7, \"app\":\"7\",
//     app=7, STATE_APP_ID=7, app%3D7, app: 7);
//   - the value after an app flag or the word app/apps/appId and spaces (--app 7, "from app 7");
//   - a path segment after /k/ (kintone app URLs /k/7/…), /app/ or /apps/.
func appHits(b []byte, apps map[string]string, idLens *[32]bool) []appHit {
	var hits []appHit
	for i := 0; i < len(b); i++ {
		if !isDigit(b[i]) {
			continue
		}
		j := i
		for j < len(b) && isDigit(b[j]) {
			j++
		}
		start := i
		i = j
		if j-start >= len(idLens) || !idLens[j-start] {
			continue
		}
		if start > 0 && isIdent(b[start-1]) && b[start-1] != '-' && !(start >= 3 && b[start-3] == '%' && b[start-2] == '3') {
			continue // part of a longer word or number
		}
		if j < len(b) && isIdent(b[j]) && b[j] != '-' && b[j] != '.' {
			continue
		}
		if _, ok := apps[string(b[start:j])]; !ok {
			continue
		}
		if quote, form, ok := appContext(b, start); ok {
			hits = append(hits, appHit{start: start, end: j, id: string(b[start:j]), quote: quote, form: form})
		}
	}
	return hits
}

// appContext decides whether the digits at b[pos] sit in an app position (see appHits).
func appContext(b []byte, pos int) (quote, form string, ok bool) {
	p, valueQuoted, spaces := valueLead(b, pos)
	sep, p := separatorBefore(b, p)
	if sep == '/' {
		if valueQuoted || spaces > 0 {
			return "", "", false
		}
		return pathContext(b, p)
	}
	if sep != 0 {
		for p > 0 && b[p-1] == ' ' {
			p--
		}
	}
	key, keyQuote := keyBefore(b, p)
	if key == "" {
		return "", "", false
	}
	if sep == 0 {
		// Only "--app 7" (a flag followed by spaces) and prose "app 7" / "apps 7" / "appId 7".
		if spaces == 0 || keyQuote != "" {
			return "", "", false
		}
		if n := normKey(key); !strings.HasPrefix(key, "-") && n != "app" && n != "apps" && n != "appid" {
			return "", "", false
		}
	}
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		key = key[i+1:]
	}
	if !isAppKey(key) {
		return "", "", false
	}
	// A bare number after a quoted key is a JSON number: keep the document valid by quoting
	// the role the same way the key was quoted.
	if !valueQuoted && keyQuote != "" && sep == ':' && !strings.HasSuffix(keyQuote, "'") {
		quote = keyQuote
	}
	return quote, "field " + key, true
}

// valueLead steps back from the value at pos over its opening quote (an escaped one too) and
// the spaces before it.
func valueLead(b []byte, pos int) (p int, valueQuoted bool, spaces int) {
	p = pos
	if p > 0 && (b[p-1] == '"' || b[p-1] == '\'') {
		p--
		valueQuoted = true
		if p > 0 && b[p-1] == '\\' {
			p--
		}
	}
	for p > 0 && b[p-1] == ' ' {
		p--
		spaces++
	}
	return p, valueQuoted, spaces
}

// separatorBefore is the separator ending at p ('=', ':', '/', or a URL-encoded '='; 0 for
// none) and where it starts.
func separatorBefore(b []byte, p int) (byte, int) {
	switch {
	case p > 0 && (b[p-1] == '=' || b[p-1] == ':' || b[p-1] == '/'):
		return b[p-1], p - 1
	case p >= 3 && b[p-3] == '%' && b[p-2] == '3' && (b[p-1] == 'D' || b[p-1] == 'd'):
		return '=', p - 3
	}
	return 0, p
}

// pathContext says whether the path segment ending at p is /k/, /app/ or /apps/: a value
// after it is an app id.
func pathContext(b []byte, p int) (quote, form string, ok bool) {
	ks := p
	for ks > 0 && isAlnum(b[ks-1]) {
		ks--
	}
	seg := strings.ToLower(string(b[ks:p]))
	if ks > 0 && b[ks-1] == '/' && (seg == "k" || seg == "app" || seg == "apps") {
		return "", "path /" + seg + "/", true
	}
	return "", "", false
}

// keyBefore is the key (identifier characters and dots) ending at p, after its closing quote
// if it has one, and that quote (with its backslash when escaped).
func keyBefore(b []byte, p int) (key, keyQuote string) {
	if p > 0 && (b[p-1] == '"' || b[p-1] == '\'') {
		keyQuote = string(b[p-1])
		p--
		if p > 0 && b[p-1] == '\\' {
			keyQuote = `\` + keyQuote
			p--
		}
	}
	ks := p
	for ks > 0 && (isIdent(b[ks-1]) || b[ks-1] == '.') {
		ks--
	}
	return string(b[ks:p]), keyQuote
}

// isAppKey: a key or flag that names an app (see appHits).
func isAppKey(k string) bool {
	n := normKey(k)
	for _, suf := range []string{"app", "apps", "appid", "appids"} {
		if strings.HasSuffix(n, suf) {
			return true
		}
	}
	return false
}

// isSensitiveKey: a JSON key, header or flag whose value is a credential whatever it is.
func isSensitiveKey(k string) bool {
	n := normKey(k)
	for _, suf := range []string{"token", "tokens", "secret", "password", "passwd", "authorization", "cookie", "apikey"} {
		if strings.HasSuffix(n, suf) {
			return true
		}
	}
	return false
}

// normKey lower-cases k and drops '-', '_', '.' and spaces: "X-Cybozu-API-Token" ->
// "xcybozuapitoken".
func normKey(k string) string {
	b := make([]byte, 0, len(k))
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c == '-' || c == '_' || c == '.' || c == ' ':
		case c >= 'A' && c <= 'Z':
			b = append(b, c+('a'-'A'))
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// keyHints finds, case-insensitively, the words that make a key matter to the JSON rules
// (reasons and credentials; app keys are covered by the text rules). Text without any of them
// skips the JSON-in-text pass, which is what keeps large logs fast.
var keyHints = func() *dfa {
	var pats []pattern
	for _, w := range []string{"reason", "token", "secret", "passw", "authoriz", "cookie", "apikey", "api_key", "api-key"} {
		pats = append(pats, pattern{text: []byte(w)})
	}
	m := newDFA(pats)
	for c := 'A'; c <= 'Z'; c++ {
		m.cls[c] = m.cls[c+('a'-'A')] // case-insensitive: upper case shares the lower-case class
	}
	return m
}()

func hasKeyHint(b []byte) bool { return keyHints.any(b) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isIdent(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// sanitizeName keeps a name usable inside a placeholder: [A-Za-z0-9_.-] only.
func sanitizeName(s, fallback string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isAlnum(c) || c == '_' || c == '-' || c == '.' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return fallback
	}
	return b.String()
}
