// Package kintoneapi is a small client for the kintone REST API (the /k/v1 record, file and
// app endpoints). It is shared by the harness (behind its write guard) and by the sandbox's
// reference FlowNet and kSQL-Flow, so that every kintone request in the project is shaped,
// authenticated and decoded the same way. It knows nothing about which writes are allowed:
// that is the guard's job in internal/harness/kintone.
package kintoneapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Field is one field of a record as kintone encodes it: {"type": …, "value": …}. Type is set
// on reads and omitted on writes.
type Field struct {
	Type  string `json:"type,omitempty"`
	Value any    `json:"value"`
}

// Record maps field codes to fields.
type Record map[string]Field

// Str returns the value of a field as a string: strings as they are, numbers formatted,
// nil and missing fields as "". Lists (CHECK_BOX, FILE) are JSON-encoded.
func (r Record) Str(code string) string {
	f, ok := r[code]
	if !ok || f.Value == nil {
		return ""
	}
	switch v := f.Value.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// ID is the record id ($id, or the RECORD_NUMBER-less fallback "レコード番号" is not used).
func (r Record) ID() string { return r.Str("$id") }

// Revision is the record's $revision.
func (r Record) Revision() string { return r.Str("$revision") }

// Values builds a write record from plain values: each value becomes {"value": v}.
func Values(kv map[string]any) Record {
	rec := make(Record, len(kv))
	for k, v := range kv {
		rec[k] = Field{Value: v}
	}
	return rec
}

// forWrite strips types and system fields so a record read back can be written again.
func forWrite(rec Record) map[string]map[string]any {
	out := make(map[string]map[string]any, len(rec))
	for k, f := range rec {
		if strings.HasPrefix(k, "$") {
			continue
		}
		switch f.Type {
		case "RECORD_NUMBER", "CREATOR", "CREATED_TIME", "MODIFIER", "UPDATED_TIME", "__ID__", "__REVISION__", "STATUS", "STATUS_ASSIGNEE", "CATEGORY":
			continue
		}
		out[k] = map[string]any{"value": f.Value}
	}
	return out
}

// APIError is kintone's error body together with the HTTP status.
type APIError struct {
	Status  int            `json:"-"`
	Code    string         `json:"code"`
	ID      string         `json:"id"`
	Message string         `json:"message"`
	Errors  map[string]any `json:"errors,omitempty"`
	// Attempts is how many times the request was sent (more than 1 after 429s).
	Attempts int `json:"-"`
}

func (e *APIError) Error() string {
	var s string
	if e.Code == "" {
		s = fmt.Sprintf("kintone: HTTP %d: %s", e.Status, e.Message)
	} else {
		s = fmt.Sprintf("kintone: HTTP %d [%s] %s", e.Status, e.Code, e.Message)
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (sent %d times)", e.Attempts)
	}
	return s
}

// NetworkError wraps a transport failure: the request may or may not have reached kintone,
// and no HTTP response was read. Callers that write must adjudicate by re-reading.
type NetworkError struct {
	Method, Path string
	Err          error
}

func (e *NetworkError) Error() string {
	return fmt.Sprintf("kintone: %s %s: network error: %v", e.Method, e.Path, e.Err)
}
func (e *NetworkError) Unwrap() error { return e.Err }

// IsCode reports whether err is a kintone API error with the given code.
func IsCode(err error, code string) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == code
}

// IsNetwork reports whether err is a transport error (no HTTP response).
func IsNetwork(err error) bool {
	var ne *NetworkError
	return errors.As(err, &ne)
}

// StatusOf returns the HTTP status of an API error, or 0.
func StatusOf(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// Client talks to one kintone base URL with one API token per app.
type Client struct {
	BaseURL string
	HTTP    *http.Client
	// Tokens maps app id to its API token (several may be comma-separated, as kintone allows).
	Tokens map[string]string
	// Retry is how the client answers kintone's 429 (retry.go).
	Retry Retry
}

// New returns a client that backs off on 429 as DefaultRetry says. hc may be nil (a client
// with a 60 s timeout is used).
func New(baseURL string, hc *http.Client, tokens map[string]string) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), HTTP: hc, Tokens: tokens, Retry: DefaultRetry}
}

// HTTPClientWithCA returns an HTTP client that trusts the system roots plus the PEM
// certificates in caFile (the sandbox emulator's per-start CA). An empty caFile gives the
// system roots only.
func HTTPClientWithCA(caFile string) (*http.Client, error) {
	return HTTPClientWithCAs(caFile)
}

// HTTPClientWithCAs is HTTPClientWithCA with the certificates of every named PEM file (empty
// names skipped) added to the system pool, as Node adds NODE_EXTRA_CA_CERTS to its roots.
func HTTPClientWithCAs(caFiles ...string) (*http.Client, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	for _, caFile := range caFiles {
		if caFile == "" {
			continue
		}
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("read CA file: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", caFile)
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}, nil
}

// HTTPClientFromEnv is HTTPClientWithCA with the CA file named by SSL_CERT_FILE, so Go
// children of the sandbox trust the emulator on every OS (Go honours SSL_CERT_FILE only on Unix).
func HTTPClientFromEnv() (*http.Client, error) {
	return HTTPClientWithCA(os.Getenv("SSL_CERT_FILE"))
}

func (c *Client) token(app string) string { return c.Tokens[app] }

// Do sends one request. in is JSON-encoded as the body (for GET as well, as kintone accepts);
// out, when non-nil, receives the decoded 2xx body. A non-2xx status returns *APIError, a
// transport failure *NetworkError.
func (c *Client) Do(ctx context.Context, method, path, token string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, body)
	if err != nil {
		return fmt.Errorf("build %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.send(req, token, out)
}

// send sends req, again after a backoff while kintone answers 429 and Retry allows it
// (retry.go), and decodes a 2xx body into out.
func (c *Client) send(req *http.Request, token string, out any) error {
	if token != "" {
		req.Header.Set("X-Cybozu-API-Token", token)
	}
	p := c.Retry
	sleep := p.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	for attempt := 1; ; attempt++ {
		data, header, err := c.sendOnce(req)
		var ae *APIError
		if !errors.As(err, &ae) || attempt >= p.MaxAttempts || !resendable(req, ae) {
			if ae != nil {
				ae.Attempts = attempt
			}
			if err != nil {
				return err
			}
			return decodeInto(req, data, out)
		}
		wait := p.Backoff(attempt)
		if ra, ok := retryAfter(header); ok && !p.IgnoreRetryAfter {
			if ra > maxRetryAfter {
				ae.Attempts = attempt
				return ae // asked to stay away that long, the tenant is as good as unavailable
			}
			wait = max(wait, ra)
		}
		if err := sleep(req.Context(), wait); err != nil {
			ae.Attempts = attempt
			return fmt.Errorf("%w; stopped retrying: %w", ae, err)
		}
		if req, err = replay(req); err != nil {
			ae.Attempts = attempt
			return fmt.Errorf("%w; cannot send again: %w", ae, err)
		}
	}
}

// maxRetryAfter is the longest Retry-After the client waits out.
const maxRetryAfter = time.Minute

// replay is a copy of req with a fresh body, to send again.
func replay(req *http.Request) (*http.Request, error) {
	r := req.Clone(req.Context())
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("rewind %s %s body: %w", req.Method, req.URL.Path, err)
		}
		r.Body = body
	}
	return r, nil
}

// sendOnce sends req once: the body of a 2xx answer, or *APIError, or *NetworkError.
func (c *Client) sendOnce(req *http.Request) ([]byte, http.Header, error) {
	path := req.URL.Path
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, nil, &NetworkError{Method: req.Method, Path: path, Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, resp.Header, &NetworkError{Method: req.Method, Path: path, Err: fmt.Errorf("read response: %w", err)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		ae := &APIError{Status: resp.StatusCode}
		if json.Unmarshal(data, ae) != nil || (ae.Code == "" && ae.Message == "") {
			ae.Message = strings.TrimSpace(string(data))
		}
		return nil, resp.Header, ae
	}
	return data, resp.Header, nil
}

func decodeInto(req *http.Request, data []byte, out any) error {
	if out == nil {
		return nil
	}
	if raw, ok := out.(*[]byte); ok {
		*raw = data
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("decode %s %s response: %w", req.Method, req.URL.Path, err)
	}
	return nil
}

// GetRecord reads one record.
func (c *Client) GetRecord(ctx context.Context, app, id string) (Record, error) {
	var out struct {
		Record Record `json:"record"`
	}
	q := url.Values{"app": {app}, "id": {id}}
	if err := c.get(ctx, "/k/v1/record.json", app, q, &out); err != nil {
		return nil, fmt.Errorf("get record %s/%s: %w", app, id, err)
	}
	return out.Record, nil
}

func (c *Client) get(ctx context.Context, path, app string, q url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+path+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	return c.send(req, c.token(app), out)
}

// GetRecords runs one records.json GET with the query as given (conditions, order by,
// limit, offset); kintone returns at most 100 records when the query has no limit.
func (c *Client) GetRecords(ctx context.Context, app, query string, fields []string) ([]Record, error) {
	q := url.Values{"app": {app}}
	if query != "" {
		q.Set("query", query)
	}
	for i, f := range fields {
		q.Set(fmt.Sprintf("fields[%d]", i), f)
	}
	var out struct {
		Records []Record `json:"records"`
	}
	if err := c.get(ctx, "/k/v1/records.json", app, q, &out); err != nil {
		return nil, fmt.Errorf("get records of app %s (%q): %w", app, query, err)
	}
	return out.Records, nil
}

// Count returns the number of records matching condition (totalCount).
func (c *Client) Count(ctx context.Context, app, condition string) (int, error) {
	q := url.Values{"app": {app}, "totalCount": {"true"}, "fields[0]": {"$id"}}
	query := "limit 1"
	if strings.TrimSpace(condition) != "" {
		query = condition + " limit 1"
	}
	q.Set("query", query)
	var out struct {
		TotalCount *string `json:"totalCount"`
	}
	if err := c.get(ctx, "/k/v1/records.json", app, q, &out); err != nil {
		return 0, fmt.Errorf("count records of app %s (%q): %w", app, condition, err)
	}
	if out.TotalCount == nil {
		return 0, fmt.Errorf("count records of app %s: response has no totalCount", app)
	}
	return strconv.Atoi(*out.TotalCount)
}

// GetAll reads every record matching condition (may be ""), paging by $id so that neither
// the 500-record limit nor the 10,000 offset cap applies. Records come in ascending $id.
func (c *Client) GetAll(ctx context.Context, app, condition string, fields []string) ([]Record, error) {
	const page = 500
	if len(fields) > 0 && !slices.Contains(fields, "$id") {
		fields = append(append([]string(nil), fields...), "$id")
	}
	var all []Record
	last := "0"
	for {
		cond := "$id > " + last
		if strings.TrimSpace(condition) != "" {
			cond = "(" + condition + ") and " + cond
		}
		recs, err := c.GetRecords(ctx, app, fmt.Sprintf("%s order by $id asc limit %d", cond, page), fields)
		if err != nil {
			return nil, err
		}
		all = append(all, recs...)
		if len(recs) < page {
			return all, nil
		}
		last = recs[len(recs)-1].ID()
	}
}

// AddRecord inserts one record and returns its id and revision.
func (c *Client) AddRecord(ctx context.Context, app string, rec Record) (id, revision string, err error) {
	var out struct {
		ID       string `json:"id"`
		Revision string `json:"revision"`
	}
	in := map[string]any{"app": app, "record": forWrite(rec)}
	if err := c.Do(ctx, http.MethodPost, "/k/v1/record.json", c.token(app), in, &out); err != nil {
		return "", "", fmt.Errorf("add record to app %s: %w", app, err)
	}
	return out.ID, out.Revision, nil
}

// AddRecords inserts up to 100 records in one call (all or none).
func (c *Client) AddRecords(ctx context.Context, app string, recs []Record) (ids, revisions []string, err error) {
	list := make([]map[string]map[string]any, len(recs))
	for i, r := range recs {
		list[i] = forWrite(r)
	}
	var out struct {
		IDs       []string `json:"ids"`
		Revisions []string `json:"revisions"`
	}
	in := map[string]any{"app": app, "records": list}
	if err := c.Do(ctx, http.MethodPost, "/k/v1/records.json", c.token(app), in, &out); err != nil {
		return nil, nil, fmt.Errorf("add %d records to app %s: %w", len(recs), app, err)
	}
	return out.IDs, out.Revisions, nil
}

// UpdateRecord updates one record by id. A non-empty revision makes the update conditional
// (409 GAIA_CO02 when stale). It returns the new revision.
func (c *Client) UpdateRecord(ctx context.Context, app, id string, rec Record, revision string) (string, error) {
	in := map[string]any{"app": app, "id": id, "record": forWrite(rec)}
	if revision != "" {
		in["revision"] = revision
	}
	var out struct {
		Revision string `json:"revision"`
	}
	if err := c.Do(ctx, http.MethodPut, "/k/v1/record.json", c.token(app), in, &out); err != nil {
		return "", fmt.Errorf("update record %s/%s: %w", app, id, err)
	}
	return out.Revision, nil
}

// UpdateByKey updates one record found by a unique field.
func (c *Client) UpdateByKey(ctx context.Context, app, keyField, keyValue string, rec Record, revision string) (string, error) {
	in := map[string]any{
		"app":       app,
		"updateKey": map[string]any{"field": keyField, "value": keyValue},
		"record":    forWrite(rec),
	}
	if revision != "" {
		in["revision"] = revision
	}
	var out struct {
		Revision string `json:"revision"`
	}
	if err := c.Do(ctx, http.MethodPut, "/k/v1/record.json", c.token(app), in, &out); err != nil {
		return "", fmt.Errorf("update record of app %s by %s=%q: %w", app, keyField, keyValue, err)
	}
	return out.Revision, nil
}

// DeleteRecords deletes up to 100 records; revisions, when given, must match ids one to one.
func (c *Client) DeleteRecords(ctx context.Context, app string, ids, revisions []string) error {
	if len(ids) == 0 {
		return nil
	}
	in := map[string]any{"app": app, "ids": ids}
	if len(revisions) > 0 {
		if len(revisions) != len(ids) {
			return fmt.Errorf("delete records of app %s: %d revisions for %d ids", app, len(revisions), len(ids))
		}
		in["revisions"] = revisions
	}
	if err := c.Do(ctx, http.MethodDelete, "/k/v1/records.json", c.token(app), in, nil); err != nil {
		return fmt.Errorf("delete %d records of app %s: %w", len(ids), app, err)
	}
	return nil
}

// UploadFile uploads a file with the token of app and returns the upload file key (to be
// put in a FILE field of that app's record).
func (c *Client) UploadFile(ctx context.Context, app, name, contentType string, data []byte) (string, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	h := make(map[string][]string)
	h["Content-Disposition"] = []string{fmt.Sprintf(`form-data; name="file"; filename=%q`, name)}
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	h["Content-Type"] = []string{contentType}
	part, err := mw.CreatePart(h)
	if err != nil {
		return "", fmt.Errorf("upload %s: %w", name, err)
	}
	if _, err := part.Write(data); err != nil {
		return "", fmt.Errorf("upload %s: %w", name, err)
	}
	if err := mw.Close(); err != nil {
		return "", fmt.Errorf("upload %s: %w", name, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+"/k/v1/file.json", &buf)
	if err != nil {
		return "", fmt.Errorf("upload %s: %w", name, err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	var out struct {
		FileKey string `json:"fileKey"`
	}
	if err := c.send(req, c.token(app), &out); err != nil {
		return "", fmt.Errorf("upload %s: %w", name, err)
	}
	return out.FileKey, nil
}

// DownloadFile reads a file by the key found in a record's FILE field.
func (c *Client) DownloadFile(ctx context.Context, app, fileKey string) ([]byte, error) {
	var data []byte
	if err := c.get(ctx, "/k/v1/file.json", app, url.Values{"fileKey": {fileKey}}, &data); err != nil {
		return nil, fmt.Errorf("download file %s: %w", fileKey, err)
	}
	return data, nil
}

// IsTimeout reports whether a network error was a timeout (for adjudication messages).
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
