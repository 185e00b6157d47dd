package kintoneapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Token permissions a probe can prove.
const (
	PermView   = "view"
	PermAdd    = "add"
	PermEdit   = "edit"
	PermDelete = "delete"
)

// ProbePermission finds out, writing nothing, whether token may use the record API that
// needs perm in app. It relies on kintone checking the API token's permission for the API
// before it validates the request (kintone-api.md §2: insufficient permission is 403
// GAIA_NO01), and sends requests that cannot write when they pass that check:
//
//   - view:   GET records.json, query "limit 1" (a read) → 200;
//   - add:    POST records.json with an empty records array → 200 {"ids":[]} (§1.6: nothing added);
//   - edit:   PUT record.json with neither id nor updateKey → 400 CB_VA01 (§1.4: no record named);
//   - delete: DELETE records.json without ids → 400 CB_VA01 (§1.8: nothing deleted).
//
// 403 GAIA_NO01 means the token lacks perm (false, nil). 200 or 400 CB_VA01 means it has it.
// Anything else (an unknown token GAIA_IA02, a token of another app, an unknown app) is an
// error with kintone's code. The permission-before-validation order is what the sandbox
// emulator does and what kintone's documented 403 implies; were a tenant to validate first,
// the probe would wrongly pass a token lacking edit or delete and the run would meet the 403
// at its first such write, as it would without the probe.
func ProbePermission(ctx context.Context, hc *http.Client, baseURL, app, token, perm string) (bool, error) {
	base := strings.TrimRight(baseURL, "/")
	var method, path string
	var body any
	switch perm {
	case PermView:
		method, path = http.MethodGet, "/k/v1/records.json?"+url.Values{"app": {app}, "query": {"limit 1"}, "fields[0]": {"$id"}}.Encode()
	case PermAdd:
		method, path, body = http.MethodPost, "/k/v1/records.json", map[string]any{"app": app, "records": []any{}}
	case PermEdit:
		method, path, body = http.MethodPut, "/k/v1/record.json", map[string]any{"app": app}
	case PermDelete:
		method, path, body = http.MethodDelete, "/k/v1/records.json", map[string]any{"app": app}
	default:
		return false, fmt.Errorf("unknown permission %q", perm)
	}
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return false, err
	}
	req.Header.Set("X-Cybozu-API-Token", token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(data, &e)
	switch {
	case resp.StatusCode == http.StatusOK:
		return true, nil
	case resp.StatusCode == http.StatusBadRequest && e.Code == "CB_VA01" && perm != PermView:
		return true, nil
	case e.Code == "GAIA_NO01":
		return false, nil
	}
	return false, fmt.Errorf("%s %s: HTTP %d %s %s", method, strings.SplitN(path, "?", 2)[0], resp.StatusCode, e.Code, e.Message)
}
