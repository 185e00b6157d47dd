// Package kintone is the harness's own kintone client: reads pass through,
// every write goes through a guard that decides, per app and operation,
// whether the harness may make it:
//
//	(a) request app: records whose `reason` starts with "<scope>:" (adds,
//	    updates, deletes; updates and deletes are checked against the stored
//	    record);
//	(b) state and audit apps: cleanup deletes of the scope's records only;
//	(c) CSV fixture app: the scope's rows (test_key under the scope's
//	    KSQL_FLOW_TEST_<sha256(scope)[0:12]>_ prefixes);
//	never the JOB log app, never business apps, never an app of no role.
//
// A refused write returns *RefusedError naming the rule; the step fails with
// it. The guard never sends the refused request.
package kintoneguard

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/apicount"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// TestPrefix starts every scope (and so every identifier the guard accepts).
const TestPrefix = "KSQL_FLOW_TEST_"

// Rule names in refusals.
const (
	RuleJobLogReadOnly   = "job-log-read-only"
	RuleBusinessReadOnly = "business-apps-read-only"
	RuleUnknownApp       = "unknown-app"
	RuleRequestScope     = "request-reason-scope"
	RuleRequestByKey     = "request-no-update-by-key"
	RuleCleanupOnly      = "state-audit-cleanup-deletes-only"
	RuleStateAuditScope  = "state-audit-scope"
	RuleCSVScope         = "csv-rows-scope"
	RuleRawWrite         = "raw-write"
	RuleUploadApp        = "upload-app"
)

// Field codes the guard reads.
const (
	FieldReason  = "reason"   // request app
	FieldCSVKey  = "test_key" // CSV fixture app (unique)
	requestLimit = 100        // kintone returns ≤100 without an explicit limit; chunk ids by it
)

// RefusedError is a write the guard refused.
type RefusedError struct {
	Op     string // e.g. "add record", "delete 3 records"
	App    string
	Role   string
	Rule   string
	Detail string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("kintone write guard refused %s in app %s (%s): rule %s: %s", e.Op, e.App, e.Role, e.Rule, e.Detail)
}

// IsRefused reports whether err is (or wraps) a guard refusal.
func IsRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}

// Apps are the app ids by role.
type Apps struct {
	State, Audit, Request, Log, CSV string
	Business                        []string
}

// Options tune the guard.
type Options struct {
	// Profile is the run's profile; it is needed to recognise the scope's
	// NETWORK_LOCK records (lock_key = N1(profile, network_id)). Default e2e.
	Profile string
	// CSVKeyPrefixes are further CSV key prefixes of this scope (e.g.
	// CSVDestPrefix(scope, "A")). Each must look like
	// KSQL_FLOW_TEST_<12 hex>_…; CSVRowPrefix and CSVMarkerKey are always allowed.
	CSVKeyPrefixes []string
	// Counter, when set, counts every request the client sends (its own reads, the guard's
	// reads before a write, and the writes) per app and method.
	Counter *apicount.Counter
}

// Client is the guarded client of one scenario scope.
type Client struct {
	api     *kintoneapi.Client
	apps    Apps
	scope   string
	profile string
	csvPref []string
}

var csvPrefixRE = regexp.MustCompile(`^KSQL_FLOW_TEST_[0-9a-f]{12}_`)

// New returns a guarded client for scope. The scope must start with
// KSQL_FLOW_TEST_ (an empty or foreign scope would make every prefix check
// meaningless).
func New(api *kintoneapi.Client, apps Apps, scope string, o Options) (*Client, error) {
	if api == nil {
		return nil, errors.New("guarded kintone client: nil API client")
	}
	if !strings.HasPrefix(scope, TestPrefix) || len(scope) <= len(TestPrefix) {
		return nil, fmt.Errorf("guarded kintone client: scope %q does not start with %s", scope, TestPrefix)
	}
	profile := o.Profile
	if profile == "" {
		profile = "e2e"
	}
	pref := []string{CSVRowPrefix(scope), CSVMarkerKey(scope)}
	for _, p := range o.CSVKeyPrefixes {
		if !csvPrefixRE.MatchString(p) {
			return nil, fmt.Errorf("guarded kintone client: CSV key prefix %q is not KSQL_FLOW_TEST_<12 hex>_…", p)
		}
		pref = append(pref, p)
	}
	return &Client{api: Counted(api, o.Counter), apps: apps, scope: scope, profile: profile, csvPref: pref}, nil
}

// Counted returns a copy of api whose every request (each sent again after a 429 too) is
// counted on c, per app and method; api itself is left as it is. A nil c returns api.
// Clients the harness reads with outside the guard (the scenario's read-only client)
// count their requests this way.
func Counted(api *kintoneapi.Client, c *apicount.Counter) *kintoneapi.Client {
	if api == nil || c == nil {
		return api
	}
	cp := *api
	hc := http.Client{}
	if api.HTTP != nil {
		hc = *api.HTTP
	}
	hc.Transport = apicount.Transport(hc.Transport, c, api.Tokens)
	cp.HTTP = &hc
	return &cp
}

// Scope is the scope the client writes for.
func (c *Client) Scope() string { return c.scope }

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])[:12]
}

// CSVRowPrefix is the prefix of the scope's CSV fixture rows:
// KSQL_FLOW_TEST_<sha256(scope)[0:12]>_ (scenarios.md §3.3).
func CSVRowPrefix(scope string) string { return TestPrefix + shortHash(scope) + "_" }

// CSVDestPrefix is the scope's CSV2 destination prefix for LABEL:
// KSQL_FLOW_TEST_<sha256(scope:LABEL)[0:12]>_<LABEL>_.
func CSVDestPrefix(scope, label string) string {
	return TestPrefix + shortHash(scope+":"+label) + "_" + label + "_"
}

// CSVMarkerKey is the scope's CSV2 finalize marker key.
func CSVMarkerKey(scope string) string { return TestPrefix + shortHash(scope+":FMK") + "_FMK" }

// N1Key is FlowNet's canonical network lock key: "N1:" + base64url (no
// padding) of SHA-256 over "N1\0<profile>\0<network_id>" (product-contract
// §0.1). Identifiers are NFC-normalised by FlowNet first; flowtest's
// identifiers are ASCII, for which NFC is the identity.
func N1Key(profile, networkID string) string {
	h := sha256.Sum256([]byte("N1\x00" + profile + "\x00" + networkID))
	return "N1:" + base64.RawURLEncoding.EncodeToString(h[:])
}

func (c *Client) role(app string) string {
	switch {
	case app == "":
		return "no app"
	case app == c.apps.Log:
		return "log"
	case slices.Contains(c.apps.Business, app):
		return "business"
	case app == c.apps.Request:
		return "request"
	case app == c.apps.State:
		return "state"
	case app == c.apps.Audit:
		return "audit"
	case app == c.apps.CSV:
		return "csv"
	}
	return "no role"
}

func (c *Client) refuse(op, app, rule, detail string, args ...any) error {
	return &RefusedError{Op: op, App: app, Role: c.role(app), Rule: rule, Detail: fmt.Sprintf(detail, args...)}
}

// denyByRole refuses writes to apps the harness never writes, whatever the
// operation. The JOB log check comes first: it is evidence and must stay.
func (c *Client) denyByRole(op, app string) error {
	switch c.role(app) {
	case "log":
		return c.refuse(op, app, RuleJobLogReadOnly, "the harness never writes or deletes in the JOB log app (JOB log rows are kept as evidence)")
	case "business":
		return c.refuse(op, app, RuleBusinessReadOnly, "business apps are read-only for flowtest")
	case "no role", "no app":
		return c.refuse(op, app, RuleUnknownApp, "the app is none of the apps the harness may write (request, state, audit, CSV fixture)")
	}
	return nil
}

func (c *Client) inScopeReason(reason string) bool {
	return strings.HasPrefix(reason, c.scope+":")
}

func (c *Client) inScopeCSVKey(key string) bool {
	for _, p := range c.csvPref {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// checkNewRecord decides adds (and the new values of updates).
func (c *Client) checkNewRecord(op, app string, rec kintoneapi.Record, update bool) error {
	if err := c.denyByRole(op, app); err != nil {
		return err
	}
	switch c.role(app) {
	case "request":
		if _, has := rec[FieldReason]; !has && update {
			return nil // reason unchanged; the stored one was checked
		}
		if r := rec.Str(FieldReason); !c.inScopeReason(r) {
			return c.refuse(op, app, RuleRequestScope, "reason %q does not start with the scope %q", r, c.scope+":")
		}
	case "csv":
		if _, has := rec[FieldCSVKey]; !has && update {
			return nil
		}
		if k := rec.Str(FieldCSVKey); !c.inScopeCSVKey(k) {
			return c.refuse(op, app, RuleCSVScope, "%s %q is not one of the scope's CSV keys (%s…)", FieldCSVKey, k, c.csvPref[0])
		}
	case "state", "audit":
		return c.refuse(op, app, RuleCleanupOnly, "the harness only deletes the scope's records in the %s app (FlowNet writes it)", c.role(app))
	}
	return nil
}

// ---- reads (pass through) ----

// GetRecord reads one record.
func (c *Client) GetRecord(ctx context.Context, app, id string) (kintoneapi.Record, error) {
	return c.api.GetRecord(ctx, app, id)
}

// GetRecords runs one query as given.
func (c *Client) GetRecords(ctx context.Context, app, query string, fields []string) ([]kintoneapi.Record, error) {
	return c.api.GetRecords(ctx, app, query, fields)
}

// GetAll reads every record matching condition.
func (c *Client) GetAll(ctx context.Context, app, condition string, fields []string) ([]kintoneapi.Record, error) {
	return c.api.GetAll(ctx, app, condition, fields)
}

// Count counts records matching condition.
func (c *Client) Count(ctx context.Context, app, condition string) (int, error) {
	return c.api.Count(ctx, app, condition)
}

// DownloadFile downloads a file.
func (c *Client) DownloadFile(ctx context.Context, app, fileKey string) ([]byte, error) {
	return c.api.DownloadFile(ctx, app, fileKey)
}

// Do is the raw escape hatch, for GET only: a raw write could not be checked.
func (c *Client) Do(ctx context.Context, method, path, token string, in, out any) error {
	if method != http.MethodGet {
		return &RefusedError{Op: method + " " + path, App: "-", Role: "-", Rule: RuleRawWrite, Detail: "raw requests may only read; use the guarded write methods"}
	}
	return c.api.Do(ctx, method, path, token, in, out)
}

// ---- writes (guarded) ----

// AddRecord adds one record if the guard allows it.
func (c *Client) AddRecord(ctx context.Context, app string, rec kintoneapi.Record) (string, string, error) {
	if err := c.checkNewRecord("add record", app, rec, false); err != nil {
		return "", "", err
	}
	return c.api.AddRecord(ctx, app, rec)
}

// AddRecords adds records if the guard allows every one (else none is sent).
func (c *Client) AddRecords(ctx context.Context, app string, recs []kintoneapi.Record) ([]string, []string, error) {
	for i, r := range recs {
		if err := c.checkNewRecord(fmt.Sprintf("add records (record %d of %d)", i+1, len(recs)), app, r, false); err != nil {
			return nil, nil, err
		}
	}
	return c.api.AddRecords(ctx, app, recs)
}

// UpdateRecord updates one record by id. The stored record is read first and
// must be in scope. The read is not fenced onto the update (revision stays the
// caller's): the fields that decide scope (reason, test_key) are never changed
// by the system under test, so a concurrent poller claim cannot move a record
// out of scope, and fencing would make race scenarios fail on our own read.
func (c *Client) UpdateRecord(ctx context.Context, app, id string, rec kintoneapi.Record, revision string) (string, error) {
	op := "update record " + id
	if err := c.checkNewRecord(op, app, rec, true); err != nil {
		return "", err
	}
	stored, err := c.api.GetRecord(ctx, app, id)
	if err != nil {
		return "", fmt.Errorf("write guard: read record %s/%s before update: %w", app, id, err)
	}
	if err := c.checkStored(op, app, []kintoneapi.Record{stored}); err != nil {
		return "", err
	}
	return c.api.UpdateRecord(ctx, app, id, rec, revision)
}

// UpdateByKey updates one record found by a unique field (CSV app only: the
// request app has no unique field).
func (c *Client) UpdateByKey(ctx context.Context, app, keyField, keyValue string, rec kintoneapi.Record, revision string) (string, error) {
	op := fmt.Sprintf("update record by %s", keyField)
	if err := c.checkNewRecord(op, app, rec, true); err != nil {
		return "", err
	}
	switch c.role(app) {
	case "request":
		return "", c.refuse(op, app, RuleRequestByKey, "the request app has no unique field; update by id")
	case "csv":
		if keyField != FieldCSVKey || !c.inScopeCSVKey(keyValue) {
			return "", c.refuse(op, app, RuleCSVScope, "key %s=%q is not one of the scope's CSV keys", keyField, keyValue)
		}
	}
	return c.api.UpdateByKey(ctx, app, keyField, keyValue, rec, revision)
}

// DeleteRecords deletes records (≤100) if every one is the scope's: request
// records by reason, CSV rows by key, state/audit records by the scope's
// runs, networks and locks (see inScopeStateAudit).
func (c *Client) DeleteRecords(ctx context.Context, app string, ids, revisions []string) error {
	op := fmt.Sprintf("delete %d records", len(ids))
	if err := c.denyByRole(op, app); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	stored, err := c.readByIDs(ctx, app, ids)
	if err != nil {
		return fmt.Errorf("write guard: read records of app %s before delete: %w", app, err)
	}
	if r := c.role(app); r == "state" || r == "audit" {
		if err := c.checkStateAuditScope(ctx, op, app, stored); err != nil {
			return err
		}
	} else if err := c.checkStored(op, app, stored); err != nil {
		return err
	}
	return c.api.DeleteRecords(ctx, app, ids, revisions)
}

// UploadFile uploads a file for a record the harness may write (request or
// CSV fixture app); an upload is useless anywhere else.
func (c *Client) UploadFile(ctx context.Context, app, name, contentType string, data []byte) (string, error) {
	op := "upload file"
	if err := c.denyByRole(op, app); err != nil {
		return "", err
	}
	if r := c.role(app); r != "request" && r != "csv" {
		return "", c.refuse(op, app, RuleUploadApp, "the harness attaches files only to request or CSV fixture records")
	}
	return c.api.UploadFile(ctx, app, name, contentType, data)
}

func (c *Client) readByIDs(ctx context.Context, app string, ids []string) ([]kintoneapi.Record, error) {
	out, err := c.readPresent(ctx, app, ids)
	if err != nil {
		return nil, err
	}
	found := map[string]bool{}
	for _, r := range out {
		found[r.ID()] = true
	}
	for _, id := range ids {
		if !found[id] {
			return nil, fmt.Errorf("record %s not found, so its scope cannot be verified", id)
		}
	}
	return out, nil
}

// checkStored decides whether stored records may be changed or deleted.
func (c *Client) checkStored(op, app string, recs []kintoneapi.Record) error {
	var bad []string
	switch c.role(app) {
	case "request":
		for _, r := range recs {
			if !c.inScopeReason(r.Str(FieldReason)) {
				bad = append(bad, r.ID())
			}
		}
		if len(bad) > 0 {
			return c.refuse(op, app, RuleRequestScope, "record(s) %s: reason does not start with the scope %q", strings.Join(bad, ", "), c.scope+":")
		}
	case "csv":
		for _, r := range recs {
			if !c.inScopeCSVKey(r.Str(FieldCSVKey)) {
				bad = append(bad, r.ID())
			}
		}
		if len(bad) > 0 {
			return c.refuse(op, app, RuleCSVScope, "record(s) %s: %s is not one of the scope's CSV keys", strings.Join(bad, ", "), FieldCSVKey)
		}
	case "state", "audit":
		return c.refuse(op, app, RuleCleanupOnly, "the harness only deletes the scope's records in the %s app", c.role(app))
	}
	return nil
}

// scopeIndex is what identifies the scope's records in the state and audit
// apps, read from kintone at delete time (cleanup happens once per scenario,
// after FlowNet has written everything).
type scopeIndex struct {
	runs, lockKeys         map[string]bool
	invocations, attempts  map[string]bool
	invocationsAndAttempts bool
}

func (c *Client) loadScopeRuns(ctx context.Context) (*scopeIndex, error) {
	ix := &scopeIndex{runs: map[string]bool{}, lockKeys: map[string]bool{}}
	if c.apps.State == "" {
		return ix, nil
	}
	// kintone `like` on single-line text behaved as an exact match in the
	// original harness, so the prefix filter runs here, not in the query.
	runs, err := c.api.GetAll(ctx, c.apps.State, `record_type in ("NETWORK_RUN")`, []string{"run_id", "network_id", "business_key"})
	if err != nil {
		return nil, fmt.Errorf("list NETWORK_RUN records: %w", err)
	}
	for _, r := range runs {
		nid := r.Str("network_id")
		if strings.HasPrefix(r.Str("business_key"), c.scope) || strings.HasPrefix(nid, c.scope) {
			if id := r.Str("run_id"); id != "" {
				ix.runs[id] = true
			}
			if nid != "" {
				ix.lockKeys[N1Key(c.profile, nid)] = true
			}
		}
	}
	return ix, nil
}

// loadInvocationsAndAttempts finds the scope's invocation ids (owners of
// released NETWORK_LOCK tombstones, which carry no lock_key) and attempt ids
// (ATTEMPT_RESOLUTION records carry no run_id).
func (c *Client) loadInvocationsAndAttempts(ctx context.Context, ix *scopeIndex) error {
	ix.invocationsAndAttempts = true
	ix.invocations, ix.attempts = map[string]bool{}, map[string]bool{}
	if c.apps.Audit == "" || len(ix.runs) == 0 {
		return nil
	}
	recs, err := c.api.GetAll(ctx, c.apps.Audit, `record_type in ("RUN_INVOCATION", "NODE_ATTEMPT")`, []string{"run_id", "invocation_id", "node_attempt_id"})
	if err != nil {
		return fmt.Errorf("list invocations and attempts: %w", err)
	}
	for _, r := range recs {
		if !ix.runs[r.Str("run_id")] {
			continue
		}
		if v := r.Str("invocation_id"); v != "" {
			ix.invocations[v] = true
		}
		if v := r.Str("node_attempt_id"); v != "" {
			ix.attempts[v] = true
		}
	}
	return nil
}

func (c *Client) inScopeDirect(ix *scopeIndex, r kintoneapi.Record) bool {
	if strings.HasPrefix(r.Str("business_key"), c.scope) || strings.HasPrefix(r.Str("network_id"), c.scope) {
		return true
	}
	if id := r.Str("run_id"); id != "" && ix.runs[id] {
		return true
	}
	if k := r.Str("lock_key"); k != "" && ix.lockKeys[k] {
		return true
	}
	if k, ok := strings.CutPrefix(r.Str("record_key"), "LOCK:"); ok && ix.lockKeys[k] {
		return true
	}
	// OPERATION_AUDIT NETWORK_LOCK_FORCE_RELEASED: no run_id; the audit JSON
	// in reason names the network.
	var audit struct {
		NetworkID string `json:"network_id"`
	}
	if reason := r.Str("reason"); strings.HasPrefix(strings.TrimSpace(reason), "{") &&
		json.Unmarshal([]byte(reason), &audit) == nil && strings.HasPrefix(audit.NetworkID, c.scope) {
		return true
	}
	return false
}

func (c *Client) inScopeIndirect(ix *scopeIndex, r kintoneapi.Record) bool {
	if v := r.Str("owner_invocation_id"); v != "" && ix.invocations[v] {
		return true
	}
	if v := r.Str("attempt_id"); v != "" && ix.attempts[v] {
		return true
	}
	return false
}

// checkStateAuditScope allows a delete only if every record belongs to the
// scope: its run (business_key or network_id under the scope), a record of
// such a run (run_id), the scope network's lock (lock_key/record_key =
// N1(profile, network_id)), a force-release audit naming a scope network, a
// lock tombstone owned by a scope invocation, or a resolution of a scope
// attempt.
func (c *Client) checkStateAuditScope(ctx context.Context, op, app string, recs []kintoneapi.Record) error {
	ix, err := c.loadScopeRuns(ctx)
	if err != nil {
		return fmt.Errorf("write guard: %w", err)
	}
	var bad []string
	for _, r := range recs {
		if c.inScopeDirect(ix, r) {
			continue
		}
		if !ix.invocationsAndAttempts {
			if err := c.loadInvocationsAndAttempts(ctx, ix); err != nil {
				return fmt.Errorf("write guard: %w", err)
			}
		}
		if !c.inScopeIndirect(ix, r) {
			bad = append(bad, r.ID())
		}
	}
	if len(bad) > 0 {
		return c.refuse(op, app, RuleStateAuditScope, "record(s) %s do not belong to the scope %q (no scope run, network, lock or attempt)", strings.Join(bad, ", "), c.scope)
	}
	return nil
}
