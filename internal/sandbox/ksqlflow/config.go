package ksqlflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The config file is the real kSQL-Flow 0.9.0's `ksql.config.json` (its dist/config.js
// loadConfig and schema/ksql.config.schema.json): every key below is the real's, an unknown
// key is refused (`<path>: 未知の設定キーです`), and the error words are the real's. The
// pre-0.9.0 sandbox format (formatVersion, apps.<n>.appId/token, logApp as an object,
// caFile) is refused like any other unknown key, with a hint on the way to the real format.
//
//	{
//	  "defaultProfile": "sandbox",                         // optional
//	  "profiles": {
//	    "sandbox": {
//	      "baseUrl": "https://127.0.0.1:43123",            // or env:NAME
//	      "timezone": "Asia/Tokyo",
//	      "apps": {"顧客管理": {"id": 105, "tokens": ["env:KSQL_FLOW_CUSTOMERS_API_TOKEN"]},
//	               "JOB_LOG": {"id": 104, "tokens": ["env:KSQL_FLOW_LOG_WRITE_API_TOKEN"]}},
//	      "logApp": "JOB_LOG",                               // a logical name of apps
//	      "limits": {"maxApiCalls": 10000, "maxReadRows": 200000, "maxTempRows": null, "batchTimeoutSec": 3600}
//	    }
//	  },
//	  "limits": {…}, "retry": {…}, "notifications": {…}, "logging": {…}  // defaults for every profile
//	}

// Profile is one resolved connection profile.
type Profile struct {
	Name          string
	BaseURL       string
	GuestSpaceID  *int64
	Timezone      *string
	Apps          map[string]AppRef
	LogApp        *LogAppRef
	Limits        Limits
	Retry         Retry
	HTTPTimeoutMs float64
}

// AppRef is a logical app: its kintone app id (decimal text, as the kintone client takes
// it) and its API tokens, resolved and comma-joined as the real sends them (tokenByAppId).
type AppRef struct {
	ID    int64
	AppID string
	Token string
}

// LogAppRef is the JOB log app: the logical name `logApp` names and that app.
type LogAppRef struct {
	Name  string
	AppID string
	Token string
}

// Limits are the execution limits of a profile; nil is the real's null (no limit).
type Limits struct {
	MaxAPICalls     *int64 `json:"maxApiCalls"`
	MaxReadRows     *int64 `json:"maxReadRows"`
	MaxTempRows     *int64 `json:"maxTempRows"`
	BatchTimeoutSec *int64 `json:"batchTimeoutSec"`
}

// Retry is how the kintone client answers 429 (sent up to maxAttempts times in all,
// kintoneapi.Retry); any other failed read fails the job.
type Retry struct {
	MaxAttempts       float64 `json:"maxAttempts"`
	InitialDelayMs    float64 `json:"initialDelayMs"`
	MaxDelayMs        float64 `json:"maxDelayMs"`
	RespectRetryAfter bool    `json:"respectRetryAfter"`
}

// The real's defaults (config.js DEFAULT_LIMITS, DEFAULT_RETRY, httpTimeoutMs).
const (
	defaultBatchTimeoutSec = 3600
	defaultHTTPTimeoutMs   = 30000
	maxReadRowsCap         = 200000 // limits.maxReadRows は 1〜200000
	maxTokensPerApp        = 9      // kintone's limit of tokens per request
)

var defaultRetry = Retry{MaxAttempts: 5, InitialDelayMs: 1000, MaxDelayMs: 60000, RespectRetryAfter: true}

// limitOr is a limit as a number for the engine: 0 when unlimited.
func limitOr(v *int64) int64 {
	if v == nil {
		return 0
	}
	return *v
}

// lockAge is the age after which a local lock counts as stale: batchTimeoutSec, or never
// when it is null.
func (p *Profile) lockAge() time.Duration {
	if p.Limits.BatchTimeoutSec == nil {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(*p.Limits.BatchTimeoutSec) * time.Second
}

// ConfigError is a config the loader refuses (the real's ConfigError, exit 1).
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

func cfgErr(format string, a ...any) error { return &ConfigError{fmt.Sprintf(format, a...)} }

// legacyHints name the way from a pre-0.9.0 sandbox key to the real format.
var legacyHints = map[string]string{
	"formatVersion": "the real config has no formatVersion; remove it",
	"appId":         `write {"id": <integer>, "tokens": ["env:NAME"]}`,
	"token":         `write "tokens": ["env:NAME"]`,
	"caFile":        "trust the CA through NODE_EXTRA_CA_CERTS (or SSL_CERT_FILE)",
}

// obj is one JSON object of the file.
type obj = map[string]any

// LoadConfig reads the file and resolves the profile (default: defaultProfile) as the real
// loadConfig does: unknown keys refused everywhere, extends chains merged (apps and logApp
// are never inherited), env:NAME references resolved now (an unset variable is an error),
// profile limits/retry/notifications/logging else the file's, else the defaults.
func LoadConfig(path, profile string) (*Profile, error) {
	if path == "" {
		path = "ksql.config.json"
	}
	data, err := os.ReadFile(path)
	if err != nil {
		abs, _ := filepath.Abs(path)
		return nil, cfgErr("設定ファイルが見つかりません: %s", abs)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, cfgErr("設定ファイルの JSON 解析に失敗しました (%s): %v", path, err)
	}
	raw, ok := v.(obj)
	if !ok {
		return nil, cfgErr("設定ファイルに profiles がありません (%s)", path)
	}
	if _, ok := raw["profiles"].(obj); !ok {
		return nil, cfgErr("設定ファイルに profiles がありません (%s)", path)
	}
	if err := validateKnownKeys(raw); err != nil {
		return nil, err
	}
	if profile == "" {
		profile, _ = raw["defaultProfile"].(string)
	}
	if profile == "" {
		return nil, cfgErr("プロファイルが指定されていません（--profile または defaultProfile）")
	}
	merged, err := mergeChain(raw, profile)
	if err != nil {
		return nil, err
	}
	p, err := resolveProfile(raw, merged, profile)
	if err != nil {
		return nil, err
	}
	if err := validProfileName(profile); err != nil {
		return nil, err
	}
	return p, nil
}

func isObj(v any) (obj, bool) {
	o, ok := v.(obj)
	return o, ok
}

// assertKnownKeys refuses a key not in allowed (no check when v is not an object: the
// resolver then says what is wrong with it).
func assertKnownKeys(v any, ctx string, allowed ...string) error {
	o, ok := isObj(v)
	if !ok {
		return nil
	}
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		found := false
		for _, a := range allowed {
			found = found || a == k
		}
		if !found {
			msg := fmt.Sprintf("%s.%s: 未知の設定キーです", ctx, k)
			if h, ok := legacyHints[k]; ok {
				msg += " (" + h + ")"
			}
			return &ConfigError{msg}
		}
	}
	return nil
}

func validateSections(o obj, ctx string) error {
	checks := []error{
		assertKnownKeys(o["limits"], ctx+"limits", "maxApiCalls", "maxReadRows", "maxTempRows", "batchTimeoutSec"),
		assertKnownKeys(o["retry"], ctx+"retry", "maxAttempts", "initialDelayMs", "maxDelayMs", "respectRetryAfter"),
		assertKnownKeys(o["notifications"], ctx+"notifications", "onFailure", "heartbeat"),
	}
	if n, ok := isObj(o["notifications"]); ok {
		checks = append(checks, assertKnownKeys(n["onFailure"], ctx+"notifications.onFailure", "webhook"),
			assertKnownKeys(n["heartbeat"], ctx+"notifications.heartbeat", "url", "on"))
	}
	checks = append(checks, assertKnownKeys(o["logging"], ctx+"logging", "localDir", "maskFields", "stripLiterals"))
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return nil
}

func validateKnownKeys(raw obj) error {
	if err := assertKnownKeys(raw, "config", "defaultProfile", "profiles", "limits", "retry", "notifications", "logging"); err != nil {
		return err
	}
	if err := validateSections(raw, ""); err != nil {
		return err
	}
	profiles := raw["profiles"].(obj)
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		p, ok := isObj(profiles[name])
		if !ok {
			continue
		}
		ctx := "profiles." + name
		if err := assertKnownKeys(p, ctx, "extends", "baseUrl", "timezone", "auth", "basicAuth", "clientCert", "proxy",
			"guestSpaceId", "apps", "logApp", "limits", "retry", "notifications", "logging", "httpTimeoutMs"); err != nil {
			return err
		}
		for _, err := range []error{
			assertKnownKeys(p["auth"], ctx+".auth", "type", "username", "password", "basicUsername", "basicPassword"),
			assertKnownKeys(p["basicAuth"], ctx+".basicAuth", "username", "password"),
			assertKnownKeys(p["clientCert"], ctx+".clientCert", "pfxPath", "password"),
		} {
			if err != nil {
				return err
			}
		}
		if apps, ok := isObj(p["apps"]); ok {
			an := make([]string, 0, len(apps))
			for n := range apps {
				an = append(an, n)
			}
			sort.Strings(an)
			for _, n := range an {
				if err := assertKnownKeys(apps[n], ctx+".apps."+n, "id", "tokens"); err != nil {
					return err
				}
			}
		}
		if err := validateSections(p, ctx+"."); err != nil {
			return err
		}
	}
	return nil
}

// mergeChain follows extends from the root down; apps and logApp come only from the profile
// itself.
func mergeChain(raw obj, name string) (obj, error) {
	profiles := raw["profiles"].(obj)
	var chain []obj
	seen := map[string]bool{}
	var order []string
	for cur, has := name, true; has; {
		if seen[cur] {
			return nil, cfgErr("profiles.%s: extends が循環しています (%s -> %s)", name, strings.Join(order, " -> "), cur)
		}
		seen[cur] = true
		order = append(order, cur)
		pv, ok := profiles[cur]
		if !ok {
			return nil, cfgErr("プロファイル %s が定義されていません", cur)
		}
		p, _ := isObj(pv)
		chain = append([]obj{p}, chain...)
		next, isStr := p["extends"].(string)
		cur, has = next, isStr
	}
	merged := obj{}
	for _, layer := range chain {
		for k, v := range layer {
			if k != "extends" {
				merged[k] = v
			}
		}
	}
	own, _ := isObj(profiles[name])
	delete(merged, "apps")
	delete(merged, "logApp")
	if v, ok := own["apps"]; ok {
		merged["apps"] = v
	}
	if v, ok := own["logApp"]; ok {
		merged["logApp"] = v
	}
	return merged, nil
}

// resolveEnvRef resolves an `env:NAME` reference; any other string is itself.
func resolveEnvRef(v, ctx string) (string, error) {
	name, ok := strings.CutPrefix(v, "env:")
	if !ok {
		return v, nil
	}
	if r := os.Getenv(name); r != "" {
		return r, nil
	}
	return "", cfgErr("%s: 環境変数 %s が設定されていません", ctx, name)
}

// safeInt is v as a positive safe integer (JSON number without a fraction).
func safeInt(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || f <= 0 || f > 1<<53-1 {
		return 0, false
	}
	return int64(f), true
}

func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

func resolveProfile(raw, p obj, name string) (*Profile, error) {
	ctx := "profiles." + name
	base, err := resolveBaseURL(p, ctx)
	if err != nil {
		return nil, err
	}
	out := &Profile{Name: name, BaseURL: strings.TrimRight(base, "/"), Apps: map[string]AppRef{}}
	if tz, ok := p["timezone"]; ok {
		s, isStr := tz.(string)
		if !isStr {
			return nil, cfgErr("%s.timezone は文字列で指定してください", ctx)
		}
		if _, err := time.LoadLocation(s); err != nil || s == "" || s == "Local" {
			return nil, cfgErr("%s.timezone が IANA タイムゾーン名として不正です: %s", ctx, s)
		}
		out.Timezone = &s
	}
	if err := resolveAuth(p, ctx); err != nil {
		return nil, err
	}
	if av, ok := p["apps"]; ok {
		if err := resolveApps(av, ctx, out); err != nil {
			return nil, err
		}
	}
	if err := resolveLogApp(p, ctx, out); err != nil {
		return nil, err
	}
	if err := refuseUnsupported(p, ctx); err != nil {
		return nil, err
	}
	if g, ok := p["guestSpaceId"]; ok && g != nil {
		id, ok := safeInt(g)
		if !ok {
			return nil, cfgErr("%s.guestSpaceId は正の整数で指定してください", ctx)
		}
		out.GuestSpaceID = &id
	}
	if err := resolveSections(raw, p, ctx, out); err != nil {
		return nil, err
	}
	out.HTTPTimeoutMs = defaultHTTPTimeoutMs
	if v, ok := p["httpTimeoutMs"]; ok {
		f, isNum := number(v)
		if !isNum || f <= 0 {
			return nil, cfgErr("%s.httpTimeoutMs は正の数で指定してください", ctx)
		}
		out.HTTPTimeoutMs = f
	}
	return out, nil
}

// resolveBaseURL is the profile's baseUrl (an env: reference resolved), an http(s) URL.
func resolveBaseURL(p obj, ctx string) (string, error) {
	base, _ := p["baseUrl"].(string)
	if base == "" {
		return "", cfgErr("%s.baseUrl が必要です", ctx)
	}
	base, err := resolveEnvRef(base, ctx+".baseUrl")
	if err != nil {
		return "", err
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", cfgErr("%s.baseUrl が URL として不正です: %s", ctx, base)
	}
	return base, nil
}

// resolveLogApp names the JOB log app: one of the profile's apps, by logical name.
func resolveLogApp(p obj, ctx string, out *Profile) error {
	if lv, ok := p["logApp"]; ok {
		s, isStr := lv.(string)
		if !isStr || s == "" {
			return cfgErr("%s.logApp は論理アプリ名の文字列で指定してください", ctx)
		}
		a, ok := out.Apps[s]
		if !ok {
			return cfgErr(`%s.logApp "%s" が %s.apps に定義されていません`, ctx, s, ctx)
		}
		out.LogApp = &LogAppRef{Name: s, AppID: a.AppID, Token: a.Token}
	}
	return nil
}

// refuseUnsupported refuses the settings the real accepts and the stand-in does not
// implement (a client certificate, a proxy): run without them, never half-honoured.
func refuseUnsupported(p obj, ctx string) error {
	if cc, ok := p["clientCert"]; ok {
		if c, isObj := cc.(obj); !isObj || c["pfxPath"] == nil {
			return cfgErr("%s.clientCert.pfxPath が必要です", ctx)
		}
		return cfgErr("%s.clientCert は現バージョンでは未対応です。安全のため設定を削除してから再実行してください", ctx)
	}
	if px, ok := p["proxy"]; ok && px != nil {
		if _, isStr := px.(string); !isStr {
			return cfgErr("%s.proxy は文字列で指定してください", ctx)
		}
		return cfgErr("%s.proxy は現バージョンでは未対応です。安全のため設定を削除してから再実行してください", ctx)
	}
	return nil
}

// resolveSections reads limits, retry, notifications and logging, each from the profile or
// else from the top level of the config.
func resolveSections(raw, p obj, ctx string, out *Profile) error {
	var err error
	section := func(key string) any {
		if v, ok := p[key]; ok && v != nil {
			return v
		}
		return raw[key]
	}
	if out.Limits, err = resolveLimits(section("limits"), ctx); err != nil {
		return err
	}
	if out.Retry, err = resolveRetry(section("retry")); err != nil {
		return err
	}
	if err := resolveNotifications(section("notifications"), ctx); err != nil {
		return err
	}
	if err := resolveLogging(section("logging")); err != nil {
		return err
	}
	return nil
}

// resolveAuth accepts the real's auth types; the stand-in speaks API tokens only, so a
// password or basic profile (which the real accepts) is refused here, saying so.
func resolveAuth(p obj, ctx string) error {
	a, ok := p["auth"]
	if !ok {
		if _, has := p["basicAuth"]; has {
			return cfgErr("%s.basicAuth: the sandbox kSQL-Flow does not speak Basic authentication", ctx)
		}
		return nil
	}
	o, isObj := a.(obj)
	t, isStr := o["type"].(string)
	if !isObj || !isStr {
		return cfgErr("%s.auth.type が必要です (apiToken / password / basic)", ctx)
	}
	switch t {
	case "apiToken":
		if _, has := p["basicAuth"]; has {
			return cfgErr("%s.basicAuth: the sandbox kSQL-Flow does not speak Basic authentication", ctx)
		}
		return nil
	case "password", "basic":
		return cfgErr(`%s.auth: type "%s" is valid for the real kSQL-Flow, but the sandbox kSQL-Flow speaks API tokens only`, ctx, t)
	}
	return cfgErr("%s.auth.type が不正です: %s (apiToken / password / basic)", ctx, t)
}

func resolveApps(v any, ctx string, out *Profile) error {
	apps, ok := v.(obj)
	if !ok {
		return cfgErr("%s.apps はオブジェクトで指定してください", ctx)
	}
	names := make([]string, 0, len(apps))
	for n := range apps {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		def, ok := apps[n].(obj)
		if !ok {
			return cfgErr("%s.apps.%s はオブジェクトで指定してください", ctx, n)
		}
		id, ok := safeInt(def["id"])
		if !ok {
			return cfgErr("%s.apps.%s.id は正の整数で指定してください", ctx, n)
		}
		var tokens []string
		if tv, has := def["tokens"]; has {
			list, isList := tv.([]any)
			if !isList {
				return cfgErr("%s.apps.%s.tokens は文字列の配列で指定してください", ctx, n)
			}
			for _, t := range list {
				if _, isStr := t.(string); !isStr {
					return cfgErr("%s.apps.%s.tokens は文字列の配列で指定してください", ctx, n)
				}
			}
			if len(list) > maxTokensPerApp {
				return cfgErr("%s.apps.%s.tokens は最大 %d 個までです (kintone の上限)", ctx, n, maxTokensPerApp)
			}
			for i, t := range list {
				r, err := resolveEnvRef(t.(string), fmt.Sprintf("%s.apps.%s.tokens[%d]", ctx, n, i))
				if err != nil {
					return err
				}
				tokens = append(tokens, r)
			}
		}
		out.Apps[n] = AppRef{ID: id, AppID: strconv.FormatInt(id, 10), Token: strings.Join(tokens, ",")}
	}
	return nil
}

func resolveLimits(v any, ctx string) (Limits, error) {
	def := int64(defaultBatchTimeoutSec)
	l := Limits{BatchTimeoutSec: &def}
	if v == nil {
		return l, nil
	}
	o, ok := v.(obj)
	if !ok {
		return l, cfgErr("%s.limits はオブジェクトで指定してください", ctx)
	}
	get := func(key string, dflt *int64) (*int64, error) {
		item, has := o[key]
		if !has || item == nil {
			return dflt, nil
		}
		n, ok := safeInt(item)
		if !ok {
			return nil, cfgErr("limits.%s は正の整数で指定してください", key)
		}
		return &n, nil
	}
	var err error
	if l.MaxReadRows, err = get("maxReadRows", nil); err != nil {
		return l, err
	}
	if l.MaxReadRows != nil && *l.MaxReadRows > maxReadRowsCap {
		return l, cfgErr("limits.maxReadRows は 1〜%d の整数で指定してください", maxReadRowsCap)
	}
	if l.MaxAPICalls, err = get("maxApiCalls", nil); err != nil {
		return l, err
	}
	if l.MaxTempRows, err = get("maxTempRows", nil); err != nil {
		return l, err
	}
	if l.BatchTimeoutSec, err = get("batchTimeoutSec", &def); err != nil {
		return l, err
	}
	return l, nil
}

func resolveRetry(v any) (Retry, error) {
	r := defaultRetry
	if v == nil {
		return r, nil
	}
	o, ok := v.(obj)
	if !ok {
		return r, cfgErr("retry はオブジェクトで指定してください")
	}
	for key, dst := range map[string]*float64{"maxAttempts": &r.MaxAttempts, "initialDelayMs": &r.InitialDelayMs, "maxDelayMs": &r.MaxDelayMs} {
		item, has := o[key]
		if !has {
			continue
		}
		f, isNum := number(item)
		if !isNum || f < 0 {
			return r, cfgErr("retry.%s は 0 以上の数で指定してください", key)
		}
		*dst = f
	}
	if item, has := o["respectRetryAfter"]; has {
		b, isBool := item.(bool)
		if !isBool {
			return r, cfgErr("retry.respectRetryAfter は true/false で指定してください")
		}
		r.RespectRetryAfter = b
	}
	return r, nil
}

// resolveNotifications checks the section as the real does; the stand-in sends nothing.
func resolveNotifications(v any, ctx string) error {
	if v == nil {
		return nil
	}
	o, ok := v.(obj)
	if !ok {
		return cfgErr("notifications はオブジェクトで指定してください")
	}
	if of, has := o["onFailure"]; has {
		m, _ := of.(obj)
		w, isStr := m["webhook"].(string)
		if !isStr {
			return cfgErr("notifications.onFailure.webhook が必要です")
		}
		if _, err := resolveEnvRef(w, ctx+".notifications.onFailure.webhook"); err != nil {
			return err
		}
	}
	if hb, has := o["heartbeat"]; has {
		m, _ := hb.(obj)
		u, isStr := m["url"].(string)
		if !isStr {
			return cfgErr("notifications.heartbeat.url が必要です")
		}
		if on, set := m["on"]; set && on != "success" && on != "always" {
			return cfgErr(`notifications.heartbeat.on は "success" / "always" で指定してください`)
		}
		if _, err := resolveEnvRef(u, ctx+".notifications.heartbeat.url"); err != nil {
			return err
		}
	}
	return nil
}

// resolveLogging checks the section as the real does; the stand-in keeps no JSONL log.
func resolveLogging(v any) error {
	if v == nil {
		return nil
	}
	o, ok := v.(obj)
	if !ok {
		return cfgErr("logging はオブジェクトで指定してください")
	}
	if d, has := o["localDir"]; has {
		if _, isStr := d.(string); !isStr {
			return cfgErr("logging.localDir は文字列で指定してください")
		}
	}
	if mf, has := o["maskFields"]; has {
		list, isList := mf.([]any)
		for _, f := range list {
			if _, isStr := f.(string); !isStr {
				isList = false
			}
		}
		if !isList {
			return cfgErr("logging.maskFields は文字列の配列で指定してください")
		}
	}
	if sl, has := o["stripLiterals"]; has {
		if _, isBool := sl.(bool); !isBool {
			return cfgErr("logging.stripLiterals は true/false で指定してください")
		}
	}
	return nil
}

// validProfileName applies the identifier rule of the job key: no ':' (separator), no NUL.
func validProfileName(p string) error {
	if p == "" || strings.ContainsAny(p, ":\x00") || len([]rune(p)) > 128 {
		return fmt.Errorf("profile %q: must be 1–128 characters without ':' or NUL", p)
	}
	return nil
}

// location returns the profile's timezone (UTC when unset).
func (p *Profile) location() *time.Location {
	if p.Timezone == nil {
		return time.UTC
	}
	loc, err := time.LoadLocation(*p.Timezone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// appIDs maps logical name -> app id (for static checks).
func (p *Profile) appIDs() map[string]string {
	out := make(map[string]string, len(p.Apps))
	for k, v := range p.Apps {
		out[k] = v.AppID
	}
	return out
}
