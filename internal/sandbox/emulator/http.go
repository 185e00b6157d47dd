package emulator

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// HTTP plumbing: request context, routing, parameter decoding and JSON responses.

// reqCtx is one API request: its decoded parameters and credentials.
type reqCtx struct {
	s       *Server
	r       *http.Request
	method  string
	params  map[string]any
	tokens  []string
	arrival map[*app]uint64
	counted bool // the request was counted on its apps' daily requests
}

type handlerFunc func(c *reqCtx) (any, *apiError)

// maxURLLength: kintone refuses request URLs over about 8 KB ("Request URL Too Large";
// long GETs are meant to go as POST with X-HTTP-Method-Override). We take 8192 bytes of
// path and query, and answer as a front end would: 414 with a plain-text body.
const maxURLLength = 8192

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.running.Add(1)
	defer s.running.Add(-1)
	w.Header().Set("X-ConcurrencyLimit-Limit", strconv.FormatInt(s.limit, 10))
	w.Header().Set("X-ConcurrencyLimit-Running", strconv.FormatInt(n, 10))
	if n > s.limit {
		// Refused on arrival: nothing of the request is read or done, so a client may send
		// it again, write or not.
		w.Header().Set("X-Cybozu-Error", "GAIA_TO04")
		writeError(w, errTooManyRequests())
		return
	}
	if s.admitted != nil {
		s.admitted()
	}
	if len(r.RequestURI) > maxURLLength {
		http.Error(w, "Request URL Too Large", http.StatusRequestURITooLong)
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
	if w, ok := writeAPIs[method+" "+api]; ok {
		return w.handler(s)
	}
	switch method + " " + api {
	case "GET record.json":
		return s.getRecord
	case "GET records.json":
		return s.getRecords
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

// parseParams reads a JSON body (POST/PUT/DELETE, or GET with a body / method override) and
// URL parameters (GET/DELETE: app=1&ids[0]=1&fields[0]=a).
func (c *reqCtx) parseParams() *apiError {
	c.params = map[string]any{}
	body, err := io.ReadAll(io.LimitReader(c.r.Body, 64<<20))
	if err != nil {
		return errJSON()
	}
	// kintone reads a body as parameters only with Content-Type: application/json; any
	// other body is not read, so its parameters count as missing (kintone's exact answer to
	// a wrong Content-Type is not documented; a missing parameter is its natural one).
	if len(bytes.TrimSpace(body)) > 0 && isJSONContent(c.r.Header.Get("Content-Type")) {
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

func isJSONContent(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
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
