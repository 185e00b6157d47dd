// Package kintone is the sandbox's kintone REST emulator: records with revisions and unique
// fields, API-token auth with per-token permissions, the query language subset our traffic
// uses, files, bulk and cursor APIs, over HTTPS with a CA generated per start. It is strict
// on purpose: the scenarios test what kintone decides (see issue 5 and
// ../shared/reference/kintone-api.md), so leniency here would hide the bugs they look for.
package kintone

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure an emulator start.
type Options struct {
	Addr      string                   // listen address; default 127.0.0.1:0
	PlainHTTP bool                     // serve http:// instead of https:// (not the default: real kintone is https-only)
	DataDir   string                   // load records on start, save them on Close ("" = in memory only)
	Latency   map[string]time.Duration // app role -> fixed delay added to every request on that app
	RaceDA02  bool                     // racing revision-checked updates fail with 400 GAIA_DA02 instead of 409 GAIA_CO02
}

// AppInfo describes one emulated app: its role, name, id and tokens by permission set.
type AppInfo struct {
	Role   string            `json:"role"`
	Name   string            `json:"name"`
	ID     string            `json:"id"`
	Tokens map[string]string `json:"tokens"`
}

// Server is a running emulator.
type Server struct {
	opts    Options
	apps    []*app
	byID    map[string]*app
	grants  map[string]grant // token -> grant
	files   *fileStore
	cursors *cursorStore
	now     func() time.Time

	ln      net.Listener
	srv     *http.Server
	baseURL string
	caFile  string
	tmpDir  string
	running atomic.Int64

	closeOnce sync.Once
	closeErr  error
}

type grant struct {
	a     *app
	perms map[string]bool
}

// Concurrency limit per domain on kintone: the 101st concurrent request gets 429 GAIA_TO04.
const concurrencyLimit = 100

const adminCode = "Administrator"

// Start builds the apps from the schema files (seeded, or loaded from opts.DataDir), listens
// and serves until Close. ctx bounds only the start itself.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start kintone emulator: %w", err)
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	schemas, err := LoadSchemas()
	if err != nil {
		return nil, fmt.Errorf("start kintone emulator: %w", err)
	}
	s := &Server{opts: opts, byID: map[string]*app{}, grants: map[string]grant{},
		files: newFileStore(), cursors: newCursorStore(), now: time.Now}
	for _, sc := range schemas {
		a := newApp(sc)
		a.latency = opts.Latency[sc.Role]
		s.apps = append(s.apps, a)
		s.byID[sc.ID] = a
	}
	for role := range opts.Latency {
		if s.appByRole(role) == nil {
			return nil, fmt.Errorf("start kintone emulator: latency for unknown app role %q", role)
		}
	}
	loaded := false
	if opts.DataDir != "" {
		if loaded, err = s.load(opts.DataDir); err != nil {
			return nil, fmt.Errorf("start kintone emulator: load data dir %s: %w", opts.DataDir, err)
		}
	}
	if !loaded {
		if err := s.seed(); err != nil {
			return nil, fmt.Errorf("start kintone emulator: %w", err)
		}
	}
	s.makeTokens()

	s.tmpDir, err = os.MkdirTemp("", "flowsandbox-kintone-")
	if err != nil {
		return nil, fmt.Errorf("start kintone emulator: temp dir: %w", err)
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		os.RemoveAll(s.tmpDir)
		return nil, fmt.Errorf("start kintone emulator: listen %s: %w", opts.Addr, err)
	}
	scheme := "http"
	if !opts.PlainHTTP {
		cfg, caFile, err := newTLS(s.tmpDir)
		if err != nil {
			ln.Close()
			os.RemoveAll(s.tmpDir)
			return nil, fmt.Errorf("start kintone emulator: %w", err)
		}
		s.caFile = caFile
		ln = tls.NewListener(ln, cfg)
		scheme = "https"
	}
	s.ln = ln
	s.baseURL = scheme + "://" + ln.Addr().String()
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	go s.srv.Serve(ln) //nolint:errcheck // returns ErrServerClosed on Close
	return s, nil
}

// BaseURL is e.g. https://127.0.0.1:41234 (no trailing slash).
func (s *Server) BaseURL() string { return s.baseURL }

// CAFile is the PEM file of this start's CA ("" with PlainHTTP).
func (s *Server) CAFile() string { return s.caFile }

// Apps lists the apps in role order with their tokens.
func (s *Server) Apps() []AppInfo {
	out := make([]AppInfo, 0, len(s.apps))
	for _, a := range s.apps {
		toks := map[string]string{}
		for k, v := range a.tokens {
			toks[k] = v
		}
		out = append(out, AppInfo{Role: a.schema.Role, Name: a.schema.Name, ID: a.id(), Tokens: toks})
	}
	return out
}

// Close stops serving (waiting up to 10 s for requests in flight), saves the data dir if
// one is configured and removes the CA file.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var errs []error
		// Shutdown stops accepting and waits for handlers, but it would also wait ~5 s for
		// connections a client dialled and never used (TLS conns in StateNew). So wait for
		// the handlers in flight ourselves, then close whatever connections remain.
		shut := make(chan error, 1)
		go func() { shut <- s.srv.Shutdown(ctx) }()
		tick := time.NewTicker(5 * time.Millisecond)
	wait:
		for s.running.Load() > 0 {
			select {
			case <-ctx.Done():
				errs = append(errs, fmt.Errorf("shutdown: %d requests still running after 10 s", s.running.Load()))
				break wait
			case <-tick.C:
			}
		}
		tick.Stop()
		s.srv.Close()
		<-shut
		if s.opts.DataDir != "" {
			if err := s.save(s.opts.DataDir); err != nil {
				errs = append(errs, fmt.Errorf("save data dir %s: %w", s.opts.DataDir, err))
			}
		}
		if err := os.RemoveAll(s.tmpDir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", s.tmpDir, err))
		}
		if len(errs) > 0 {
			s.closeErr = fmt.Errorf("close kintone emulator: %w", errors.Join(errs...))
		}
	})
	return s.closeErr
}

func (s *Server) appByRole(role string) *app {
	for _, a := range s.apps {
		if a.schema.Role == role {
			return a
		}
	}
	return nil
}

// makeTokens gives every permission set of every app a token (keeping loaded ones).
func (s *Server) makeTokens() {
	for _, a := range s.apps {
		sets := make([]string, 0, len(a.schema.Tokens))
		for set := range a.schema.Tokens {
			sets = append(sets, set)
		}
		sort.Strings(sets)
		for _, set := range sets {
			tok := a.tokens[set]
			if tok == "" {
				tok = randomID(40)
				a.tokens[set] = tok
			}
			perms := map[string]bool{}
			for _, p := range a.schema.Tokens[set] {
				perms[p] = true
			}
			s.grants[tok] = grant{a: a, perms: perms}
		}
	}
}

// seed inserts the schema files' seed records.
func (s *Server) seed() error {
	for _, a := range s.apps {
		if len(a.schema.Seed) == 0 {
			continue
		}
		t := s.begin(nil, a)
		for i, sr := range a.schema.Seed {
			in := fieldInput{}
			for code, fv := range sr {
				in[code] = map[string]any{"value": fv.Value}
			}
			if _, aerr := t.add(a, in, fmt.Sprintf("seed[%d]", i)); aerr != nil {
				t.rollback()
				return fmt.Errorf("seed app %s record %d: %v", a.schema.Role, i, aerr)
			}
		}
		t.commit()
	}
	return nil
}

// ---- HTTP plumbing ----

// reqCtx is one API request: its decoded parameters and credentials.
type reqCtx struct {
	s       *Server
	r       *http.Request
	method  string
	params  map[string]any
	tokens  []string
	arrival map[*app]uint64
}

type handlerFunc func(c *reqCtx) (any, *apiError)

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.running.Add(1)
	defer s.running.Add(-1)
	w.Header().Set("X-ConcurrencyLimit-Limit", strconv.Itoa(concurrencyLimit))
	w.Header().Set("X-ConcurrencyLimit-Running", strconv.FormatInt(n, 10))
	if n > concurrencyLimit {
		w.Header().Set("X-Cybozu-Error", "GAIA_TO04")
		writeError(w, errTooManyRequests())
		return
	}
	method := r.Method
	if o := r.Header.Get("X-HTTP-Method-Override"); o != "" && r.Method == http.MethodPost {
		method = strings.ToUpper(o)
	}
	api, ok := strings.CutPrefix(r.URL.Path, "/k/v1/")
	var h handlerFunc
	if ok {
		h = s.route(method, api)
	}
	if h == nil {
		writeError(w, errNotFoundAPI(r.URL.Path))
		return
	}
	c := &reqCtx{s: s, r: r, method: method, arrival: map[*app]uint64{}}
	if api == "file.json" && method == http.MethodPost {
		c.params = map[string]any{}
	} else if aerr := c.parseParams(); aerr != nil {
		writeError(w, aerr)
		return
	}
	c.tokens = tokenList(r.Header)
	if api == "file.json" && method == http.MethodGet {
		s.handleFileGet(w, c)
		return
	}
	out, aerr := h(c)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) route(method, api string) handlerFunc {
	switch method + " " + api {
	case "GET record.json":
		return s.getRecord
	case "POST record.json":
		return s.txHandler(permAdd, opAddRecord)
	case "PUT record.json":
		return s.txHandler(permEdit, opUpdateRecord)
	case "GET records.json":
		return s.getRecords
	case "POST records.json":
		return s.txHandler(permAdd, opAddRecords)
	case "PUT records.json":
		return s.txHandler(permEdit, opUpdateRecords)
	case "DELETE records.json":
		return s.txHandler(permDelete, opDeleteRecords)
	case "POST records/cursor.json":
		return s.createCursor
	case "GET records/cursor.json":
		return s.getCursor
	case "DELETE records/cursor.json":
		return s.deleteCursor
	case "POST bulkRequest.json":
		return s.bulkRequest
	case "POST file.json":
		return s.uploadFile
	case "GET file.json":
		return func(*reqCtx) (any, *apiError) { return nil, nil } // served by handleFileGet
	case "GET app.json":
		return s.getApp
	case "GET app/form/fields.json":
		return s.getFormFields
	case "GET app/form/layout.json":
		return s.getFormLayout
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, "encode response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(status)
	w.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))) //nolint:errcheck // client went away
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.bulkErr != nil {
		writeJSON(w, e.status, e.bulkBody())
		return
	}
	writeJSON(w, e.status, e.body())
}

// tokenList reads X-Cybozu-API-Token: several comma-separated tokens and/or repeated headers.
func tokenList(h http.Header) []string {
	var out []string
	for _, v := range h.Values("X-Cybozu-API-Token") {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

// parseParams reads a JSON body (POST/PUT/DELETE, or GET with a body / method override) and
// URL parameters (GET/DELETE: app=1&ids[0]=1&fields[0]=a).
func (c *reqCtx) parseParams() *apiError {
	c.params = map[string]any{}
	body, err := io.ReadAll(io.LimitReader(c.r.Body, 64<<20))
	if err != nil {
		return errJSON()
	}
	if len(bytes.TrimSpace(body)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return errJSON()
		}
		if dec.More() {
			return errJSON()
		}
		if _, err := dec.Token(); err != io.EOF {
			return errJSON()
		}
		c.params = m
	}
	q := c.r.URL.Query()
	arrays := map[string]map[int]string{}
	for k, vs := range q {
		if i := strings.IndexByte(k, '['); i > 0 && strings.HasSuffix(k, "]") {
			n, err := strconv.Atoi(k[i+1 : len(k)-1])
			if err == nil {
				name := k[:i]
				if arrays[name] == nil {
					arrays[name] = map[int]string{}
				}
				arrays[name][n] = vs[0]
				continue
			}
		}
		if _, set := c.params[k]; set {
			continue // the JSON body wins
		}
		if k == "fields" || k == "ids" || k == "revisions" {
			arr := make([]any, len(vs))
			for i, v := range vs {
				arr[i] = v
			}
			c.params[k] = arr
		} else {
			c.params[k] = vs[0]
		}
	}
	for name, m := range arrays {
		if _, set := c.params[name]; set {
			continue
		}
		idx := make([]int, 0, len(m))
		for i := range m {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		arr := make([]any, 0, len(idx))
		for _, i := range idx {
			arr = append(arr, m[i])
		}
		c.params[name] = arr
	}
	return nil
}

// scalar reads a string-or-number parameter.
func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	}
	return "", false
}

func paramInt(v any) (int64, bool) {
	s, ok := scalar(v)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n, err == nil
}

// resolveTokens checks every token sent: none -> CB_AU01; unknown -> GAIA_IA02; two for
// one app -> GAIA_DA03.
func (c *reqCtx) resolveTokens() (map[*app]grant, *apiError) {
	if len(c.tokens) == 0 {
		if c.r.Header.Get("X-Cybozu-Authorization") != "" {
			// Password authentication is not offered by the sandbox.
			return nil, &apiError{status: 401, code: "CB_WA01", message: "Password authentication failed."}
		}
		return nil, errNoLogin()
	}
	out := map[*app]grant{}
	for _, t := range c.tokens {
		g, ok := c.s.grants[t]
		if !ok {
			return nil, errBadToken()
		}
		if _, dup := out[g.a]; dup {
			return nil, errDupToken()
		}
		out[g.a] = g
	}
	return out, nil
}

// authApp authorises the request on the app named by raw (the "app" parameter): the app must
// exist, one of the tokens must belong to it (else GAIA_IA02, as real kintone answers a token
// generated for another app), and that token must carry every permission in all and at
// least one in anyOf (if given); else 403 GAIA_NO01.
func (c *reqCtx) authApp(raw any, key string, all []string, anyOf []string) (*app, *apiError) {
	grants, aerr := c.resolveTokens()
	if aerr != nil {
		return nil, aerr
	}
	id, ok := scalar(raw)
	if raw == nil || !ok || strings.TrimSpace(id) == "" {
		return nil, errField(key, msgRequiredPar)
	}
	if n, err := strconv.ParseInt(id, 10, 64); err != nil || n < 1 {
		return nil, errField(key, "must be greater than or equal to 1")
	}
	a := c.s.byID[strings.TrimSpace(id)]
	if a == nil {
		return nil, errAppNotFound(id)
	}
	g, ok := grants[a]
	if !ok {
		return nil, errBadToken()
	}
	for _, p := range all {
		if !g.perms[p] {
			return nil, errNoPermission()
		}
	}
	if len(anyOf) > 0 {
		okAny := false
		for _, p := range anyOf {
			okAny = okAny || g.perms[p]
		}
		if !okAny {
			return nil, errNoPermission()
		}
	}
	if _, seen := c.arrival[a]; !seen {
		c.arrival[a] = a.modSeq.Load()
	}
	return a, nil
}

// delay applies the app's configured latency (a long read takes real time, as on kintone).
func (c *reqCtx) delay(d time.Duration) *apiError {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-c.r.Context().Done():
		return &apiError{status: 503, code: "CB_TO01", message: "The request was cancelled."}
	}
}

// ---- records ----

type fieldOut struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// render is the API read form of r, limited to fields when non-nil.
func (a *app) render(r *record, fields map[string]bool) map[string]fieldOut {
	out := make(map[string]fieldOut, len(a.ordered)+7)
	want := func(code string) bool { return fields == nil || fields[code] }
	id := strconv.FormatInt(r.id, 10)
	admin := map[string]string{"code": adminCode, "name": adminCode}
	if want(codeID) {
		out[codeID] = fieldOut{"__ID__", id}
	}
	if want(codeRevision) {
		out[codeRevision] = fieldOut{"__REVISION__", strconv.FormatInt(r.rev, 10)}
	}
	if want(codeRecordNo) {
		out[codeRecordNo] = fieldOut{"RECORD_NUMBER", id}
	}
	if want(codeCreator) {
		out[codeCreator] = fieldOut{"CREATOR", admin}
	}
	if want(codeCreatedAt) {
		out[codeCreatedAt] = fieldOut{"CREATED_TIME", r.created}
	}
	if want(codeModifier) {
		out[codeModifier] = fieldOut{"MODIFIER", admin}
	}
	if want(codeModifiedAt) {
		out[codeModifiedAt] = fieldOut{"UPDATED_TIME", r.updated}
	}
	for _, f := range a.ordered {
		if want(f.Code) {
			out[f.Code] = fieldOut{f.Type, readValue(f, r.vals[f.Code])}
		}
	}
	return out
}

func fieldSet(v any) (map[string]bool, *apiError) {
	if v == nil {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, errJSON()
	}
	if len(arr) == 0 {
		return nil, nil
	}
	out := map[string]bool{}
	for _, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil, errJSON()
		}
		out[s] = true
	}
	return out, nil
}

func (s *Server) getRecord(c *reqCtx) (any, *apiError) {
	a, aerr := c.authApp(c.params["app"], "app", []string{permView}, nil)
	if aerr != nil {
		return nil, aerr
	}
	id, ok := paramInt(c.params["id"])
	if c.params["id"] == nil {
		return nil, errField("id", msgRequiredPar)
	}
	if !ok {
		return nil, errJSON()
	}
	if aerr := c.delay(a.latency); aerr != nil {
		return nil, aerr
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	r := a.records[id]
	if r == nil {
		return nil, errRecordNotFound(strconv.FormatInt(id, 10))
	}
	return map[string]any{"record": a.render(r, nil)}, nil
}

func (s *Server) getRecords(c *reqCtx) (any, *apiError) {
	a, aerr := c.authApp(c.params["app"], "app", []string{permView}, nil)
	if aerr != nil {
		return nil, aerr
	}
	fields, aerr := fieldSet(c.params["fields"])
	if aerr != nil {
		return nil, aerr
	}
	qs := ""
	if v := c.params["query"]; v != nil {
		var ok bool
		if qs, ok = v.(string); !ok {
			return nil, errJSON()
		}
	}
	withTotal := false
	switch v := c.params["totalCount"].(type) {
	case bool:
		withTotal = v
	case string:
		withTotal = v == "true"
	}
	q, aerr := parseQuery(a, qs, s.now())
	if aerr != nil {
		return nil, aerr
	}
	if aerr := c.delay(a.latency); aerr != nil {
		return nil, aerr
	}
	a.mu.RLock()
	page, total := q.run(a)
	recs := make([]map[string]fieldOut, len(page))
	for i, r := range page {
		recs[i] = a.render(r, fields)
	}
	a.mu.RUnlock()
	var tc any
	if withTotal {
		tc = strconv.Itoa(total)
	}
	return map[string]any{"records": recs, "totalCount": tc}, nil
}

// txOp is one write API applied inside a transaction (also a bulkRequest sub-request).
type txOp func(t *tx, a *app, p map[string]any) (any, *apiError)

// txHandler authorises, applies the latency, then runs op in its own transaction.
func (s *Server) txHandler(perm string, op txOp) handlerFunc {
	return func(c *reqCtx) (any, *apiError) {
		all := []string{perm}
		if perm == permEdit && c.params["upsert"] == true {
			all = append(all, permAdd) // UPSERT also needs add permission
		}
		a, aerr := c.authApp(c.params["app"], "app", all, nil)
		if aerr != nil {
			return nil, aerr
		}
		if aerr := c.delay(a.latency); aerr != nil {
			return nil, aerr
		}
		t := s.begin(c.arrival, a)
		out, aerr := op(t, a, c.params)
		if aerr != nil {
			t.rollback()
			return nil, aerr
		}
		t.commit()
		return out, nil
	}
}

func recordParam(v any) (fieldInput, *apiError) {
	if v == nil {
		return fieldInput{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errJSON()
	}
	return fieldInput(m), nil
}

func revisionParam(v any) (int64, *apiError) {
	if v == nil {
		return -1, nil
	}
	n, ok := paramInt(v)
	if !ok {
		return 0, errJSON()
	}
	if n < -1 {
		return 0, errField("revision", "must be greater than or equal to -1")
	}
	return n, nil
}

func opAddRecord(t *tx, a *app, p map[string]any) (any, *apiError) {
	in, aerr := recordParam(p["record"])
	if aerr != nil {
		return nil, aerr
	}
	r, aerr := t.add(a, in, "record")
	if aerr != nil {
		return nil, aerr
	}
	return map[string]string{"id": strconv.FormatInt(r.id, 10), "revision": "1"}, nil
}

func opAddRecords(t *tx, a *app, p map[string]any) (any, *apiError) {
	arr, ok := p["records"].([]any)
	if p["records"] == nil {
		return nil, errField("records", msgRequiredPar)
	}
	if !ok {
		return nil, errJSON()
	}
	if len(arr) > 100 {
		return nil, errField("records", "A maximum of 100 records can be added at one time.")
	}
	ids, revs := make([]string, 0, len(arr)), make([]string, 0, len(arr))
	for i, e := range arr {
		in, aerr := recordParam(e)
		if aerr != nil {
			return nil, aerr
		}
		r, aerr := t.add(a, in, fmt.Sprintf("records[%d]", i))
		if aerr != nil {
			return nil, aerr
		}
		ids = append(ids, strconv.FormatInt(r.id, 10))
		revs = append(revs, "1")
	}
	return map[string][]string{"ids": ids, "revisions": revs}, nil
}

// updateItem applies one update (PUT record.json body, or one item of PUT records.json).
// It returns the record and "UPDATE" or "INSERT" (upsert).
func updateItem(t *tx, a *app, item map[string]any, prefix string, upsert bool) (*record, string, *apiError) {
	_, hasID := item["id"]
	uk, hasKey := item["updateKey"]
	if item["id"] == nil {
		hasID = false
	}
	if uk == nil {
		hasKey = false
	}
	if hasID == hasKey {
		msg := "The record to be updated must be specified by one of the parameters \"id\" and \"updateKey\"."
		p := ""
		if prefix != "" {
			p = prefix + "."
		}
		return nil, "", errValidation(map[string][]string{p + "id": {msg}, p + "updateKey": {msg}})
	}
	in, aerr := recordParam(item["record"])
	if aerr != nil {
		return nil, "", aerr
	}
	rev, aerr := revisionParam(item["revision"])
	if aerr != nil {
		return nil, "", aerr
	}
	recPrefix := "record"
	if prefix != "" {
		recPrefix = prefix
	}
	var tg target
	if hasID {
		id, ok := paramInt(item["id"])
		if !ok {
			return nil, "", errJSON()
		}
		tg = target{id: id, hasID: true}
	} else {
		m, ok := uk.(map[string]any)
		if !ok {
			return nil, "", errJSON()
		}
		field, _ := m["field"].(string)
		tg = target{keyField: field, keyValue: m["value"], hasKey: true}
		// The key field inside record may only repeat the key (we accept that no-op; a
		// different value would silently re-key the record, which we refuse).
		if v, present, _ := in.value(field); present {
			if f := a.fields[field]; f != nil {
				inRecord, e1 := normalizeValue(f, v, recPrefix+"."+field)
				inKey, e2 := normalizeValue(f, m["value"], "updateKey")
				if e1 != nil || e2 != nil || inRecord != inKey {
					return nil, "", errField(recPrefix+"."+field+".value", "The field specified in \"updateKey\" cannot be updated.")
				}
			}
		}
	}
	r, aerr := t.find(a, tg)
	if aerr != nil {
		if upsert && (aerr.code == "GAIA_RE01" || aerr.code == "GAIA_RE20") {
			ins := fieldInput{}
			for k, v := range in {
				ins[k] = v
			}
			if tg.hasKey {
				ins[tg.keyField] = map[string]any{"value": tg.keyValue}
			}
			nr, aerr := t.add(a, ins, recPrefix)
			if aerr != nil {
				return nil, "", aerr
			}
			return nr, "INSERT", nil
		}
		return nil, "", aerr
	}
	nr, aerr := t.update(a, r, in, rev, recPrefix)
	if aerr != nil {
		return nil, "", aerr
	}
	return nr, "UPDATE", nil
}

func opUpdateRecord(t *tx, a *app, p map[string]any) (any, *apiError) {
	r, _, aerr := updateItem(t, a, p, "", false)
	if aerr != nil {
		return nil, aerr
	}
	return map[string]string{"revision": strconv.FormatInt(r.rev, 10)}, nil
}

func opUpdateRecords(t *tx, a *app, p map[string]any) (any, *apiError) {
	arr, ok := p["records"].([]any)
	if p["records"] == nil {
		return nil, errField("records", msgRequiredPar)
	}
	if !ok {
		return nil, errJSON()
	}
	if len(arr) > 100 {
		return nil, errField("records", "A maximum of 100 records can be updated at one time.")
	}
	upsert := p["upsert"] == true
	out := make([]map[string]string, 0, len(arr))
	for i, e := range arr {
		item, ok := e.(map[string]any)
		if !ok {
			return nil, errJSON()
		}
		r, op, aerr := updateItem(t, a, item, fmt.Sprintf("records[%d]", i), upsert)
		if aerr != nil {
			return nil, aerr
		}
		res := map[string]string{"id": strconv.FormatInt(r.id, 10), "revision": strconv.FormatInt(r.rev, 10)}
		if upsert {
			res["operation"] = op
		}
		out = append(out, res)
	}
	return map[string]any{"records": out}, nil
}

func opDeleteRecords(t *tx, a *app, p map[string]any) (any, *apiError) {
	ids, _ := p["ids"].([]any)
	if len(ids) == 0 || len(ids) > 100 {
		return nil, errValidation(map[string][]string{"ids": {"Between 1 and 100 records can be deleted at one time.", msgRequiredPar}})
	}
	var revs []any
	if p["revisions"] != nil {
		var ok bool
		if revs, ok = p["revisions"].([]any); !ok {
			return nil, errJSON()
		}
		if len(revs) != len(ids) {
			return nil, errField("revisions", "The number of revisions must match the number of ids.")
		}
	}
	for i, v := range ids {
		id, ok := paramInt(v)
		if !ok {
			return nil, errJSON()
		}
		r := a.records[id]
		if r == nil {
			return nil, errRecordNotFound(strconv.FormatInt(id, 10))
		}
		if revs != nil {
			rev := int64(-1) // a blank revision is unchecked, like -1
			if s, isStr := revs[i].(string); !isStr || strings.TrimSpace(s) != "" {
				var aerr *apiError
				if rev, aerr = revisionParam(revs[i]); aerr != nil {
					return nil, aerr
				}
			}
			if rev >= 0 && rev != r.rev {
				return nil, errRevision()
			}
		}
		t.delete(a, id)
	}
	return map[string]any{}, nil
}

// ---- app metadata ----

func (s *Server) getApp(c *reqCtx) (any, *apiError) {
	a, aerr := c.authApp(c.params["id"], "id", nil, []string{permView, permAdd, permEdit, permDelete})
	if aerr != nil {
		return nil, aerr
	}
	admin := map[string]string{"code": adminCode, "name": adminCode}
	return map[string]any{
		"appId": a.id(), "code": "", "name": a.schema.Name, "description": "",
		"spaceId": nil, "threadId": nil, "createdAt": "2026-01-01T00:00:00.000Z", "creator": admin,
		"modifiedAt": "2026-01-01T00:00:00.000Z", "modifier": admin,
	}, nil
}

func (s *Server) getFormFields(c *reqCtx) (any, *apiError) {
	a, aerr := c.authApp(c.params["app"], "app", nil, []string{permView, permAdd})
	if aerr != nil {
		return nil, aerr
	}
	props := map[string]any{}
	for _, f := range systemFields {
		props[f.Code] = map[string]any{"type": f.Type, "code": f.Code, "label": f.Label, "noLabel": false}
	}
	for _, st := range []string{"STATUS", "STATUS_ASSIGNEE", "CATEGORY"} {
		code := map[string]string{"STATUS": "ステータス", "STATUS_ASSIGNEE": "作業者", "CATEGORY": "カテゴリー"}[st]
		props[code] = map[string]any{"type": st, "code": code, "label": code, "enabled": false}
	}
	for _, f := range a.ordered {
		p := map[string]any{"type": f.Type, "code": f.Code, "label": f.Label, "noLabel": false, "required": f.Required}
		switch f.Type {
		case "SINGLE_LINE_TEXT":
			maxLen := ""
			if f.Unique {
				maxLen = "64"
			}
			p["unique"], p["minLength"], p["maxLength"], p["expression"], p["hideExpression"] = f.Unique, "", maxLen, "", false
			p["defaultValue"] = stringDefault(f)
		case "MULTI_LINE_TEXT":
			p["defaultValue"] = stringDefault(f)
		case "NUMBER":
			p["unique"], p["minValue"], p["maxValue"], p["digit"], p["displayScale"], p["unit"], p["unitPosition"] = f.Unique, "", "", false, "", "", "BEFORE"
			p["defaultValue"] = stringDefault(f)
		case "DATE", "DATETIME":
			p["unique"], p["defaultNowValue"], p["defaultValue"] = f.Unique, false, stringDefault(f)
		case "DROP_DOWN", "CHECK_BOX":
			opts := map[string]any{}
			for i, o := range f.Options {
				opts[o] = map[string]string{"label": o, "index": strconv.Itoa(i)}
			}
			p["options"] = opts
			if f.Type == "CHECK_BOX" {
				p["defaultValue"], p["align"] = defaultFor(f), "HORIZONTAL"
			} else {
				p["defaultValue"] = stringDefault(f)
			}
		case "FILE":
			p["thumbnailSize"] = "150"
		}
		props[f.Code] = p
	}
	return map[string]any{"properties": props, "revision": "1"}, nil
}

// getFormLayout puts each field on its own row in schema order; clients such as
// cli-kintone read the layout to order CSV columns.
func (s *Server) getFormLayout(c *reqCtx) (any, *apiError) {
	a, aerr := c.authApp(c.params["app"], "app", nil, []string{permView, permAdd})
	if aerr != nil {
		return nil, aerr
	}
	rows := make([]any, 0, len(a.ordered))
	for _, f := range a.ordered {
		rows = append(rows, map[string]any{"type": "ROW", "fields": []any{
			map[string]any{"type": f.Type, "code": f.Code, "size": map[string]string{"width": "200"}},
		}})
	}
	return map[string]any{"layout": rows, "revision": "1"}, nil
}

func stringDefault(f *FieldDef) string {
	s, _ := f.DefaultValue.(string)
	return s
}

// ---- files ----

func (s *Server) uploadFile(c *reqCtx) (any, *apiError) {
	// Upload needs a valid token but no record permission (kintone docs).
	if _, aerr := c.resolveTokens(); aerr != nil {
		return nil, aerr
	}
	if err := c.r.ParseMultipartForm(32 << 20); err != nil {
		return nil, errField("file", msgRequiredPar)
	}
	f, hdr, err := c.r.FormFile("file")
	if err != nil {
		return nil, errField("file", msgRequiredPar)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, &apiError{status: 400, code: "CB_VA01", message: msgInvalidInput}
	}
	ct := hdr.Header.Get("Content-Type")
	if ct == "" {
		ct = "application/octet-stream"
	}
	s.files.expire(s.now())
	return map[string]string{"fileKey": s.files.upload(hdr.Filename, ct, data, s.now())}, nil
}

func (s *Server) handleFileGet(w http.ResponseWriter, c *reqCtx) {
	grants, aerr := c.resolveTokens()
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	key, _ := scalar(c.params["fileKey"])
	if key == "" {
		writeError(w, errField("fileKey", msgRequiredPar))
		return
	}
	f := s.files.get(key)
	if f == nil {
		writeError(w, errFileNotFound(key))
		return
	}
	g, ok := grants[s.byID[f.app]]
	if !ok {
		writeError(w, errBadToken())
		return
	}
	if !g.perms[permView] {
		writeError(w, errNoPermission())
		return
	}
	w.Header().Set("Content-Type", f.contentType)
	w.Header().Set("Content-Disposition", "attachment; filename*=UTF-8''"+url.PathEscape(f.name))
	w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
	w.WriteHeader(http.StatusOK)
	w.Write(f.data) //nolint:errcheck // client went away
}
