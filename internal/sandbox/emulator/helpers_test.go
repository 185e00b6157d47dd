package emulator

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/stretchr/testify/require"
)

// raw is a plain HTTP caller for asserting exact statuses, codes and body shapes.
type raw struct {
	t  testing.TB
	s  *Server
	hc *http.Client
}

func newRaw(t testing.TB, s *Server) *raw {
	hc, err := kintoneapi.HTTPClientWithCA(s.CAFile())
	require.NoError(t, err)
	if tr, ok := hc.Transport.(*http.Transport); ok {
		tr.MaxIdleConnsPerHost = 128
	}
	return &raw{t: t, s: s, hc: hc}
}

type resp struct {
	status int
	body   []byte
	json   map[string]any
	header http.Header
}

func (r resp) code() string { c, _ := r.json["code"].(string); return c }

// errKeys returns the keys of the CB_VA01 errors map.
func (r resp) errKeys() []string {
	m, _ := r.json["errors"].(map[string]any)
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// do sends method path with an optional JSON body and the given tokens (joined by commas).
func (c *raw) do(method, path, token string, body any) resp {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(c.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.s.BaseURL()+path, rd)
	require.NoError(c.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("X-Cybozu-API-Token", token)
	}
	return c.send(req)
}

func (c *raw) send(req *http.Request) resp {
	c.t.Helper()
	res, err := c.hc.Do(req)
	require.NoError(c.t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(c.t, err)
	out := resp{status: res.StatusCode, body: data, header: res.Header}
	if len(data) > 0 && data[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		require.NoError(c.t, dec.Decode(&out.json), "body %s", data)
	}
	return out
}

// get sends a GET with URL parameters.
func (c *raw) get(path, token string, params url.Values) resp {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.s.BaseURL()+path+"?"+params.Encode(), nil)
	require.NoError(c.t, err)
	if token != "" {
		req.Header.Set("X-Cybozu-API-Token", token)
	}
	return c.send(req)
}

func v(x any) map[string]any { return map[string]any{"value": x} }

// rec builds a write record from code/value pairs.
func rec(kv ...any) map[string]any {
	out := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = v(kv[i+1])
	}
	return out
}

// fieldValue digs record[code].value out of a decoded record.
func fieldValue(r any, code string) any {
	m, _ := r.(map[string]any)
	f, _ := m[code].(map[string]any)
	return f["value"]
}

func records(r resp) []any {
	a, _ := r.json["records"].([]any)
	return a
}

func mustRequest(t testing.TB, method, u, body string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}
