package redact

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const tok = "kT0ken/Value+With=Specials&x<y>\"q\"\\é"

func TestSecretsFromEnv(t *testing.T) {
	got := SecretsFromEnv(map[string]string{
		"KSQL_FLOWNET_STATE_API_TOKEN": "a1",
		"client_secret":                "b2",
		"Db_PassWord":                  "c3",
		"KSQL_FLOWNET_STATE_APP_ID":    "4257",
		"EMPTY_TOKEN":                  "",
		"HOME":                         "/root",
	})
	assert.Equal(t, map[string]string{"KSQL_FLOWNET_STATE_API_TOKEN": "a1", "client_secret": "b2", "Db_PassWord": "c3"}, got)
}

func TestRedactEachEncoding(t *testing.T) {
	r := New(map[string]string{"KINTONE_TOKEN": tok}, nil)
	jsonGo, _ := json.Marshal(tok)
	cases := map[string]string{
		"raw":                tok,
		"query-escaped":      url.QueryEscape(tok),
		"path-escaped":       url.PathEscape(tok),
		"lower-hex escaped":  lowerHexEscapes(url.QueryEscape(tok)),
		"base64 std":         base64.StdEncoding.EncodeToString([]byte(tok)),
		"base64 url":         base64.URLEncoding.EncodeToString([]byte(tok)),
		"base64 raw":         base64.RawStdEncoding.EncodeToString([]byte(tok)),
		"json go":            string(jsonGo[1 : len(jsonGo)-1]),
		"json no html":       jsonEscape(tok, false, false),
		"json ascii":         jsonEscape(tok, true, false),
		"json slash":         jsonEscape(tok, false, true),
		"json twice":         jsonEscape(jsonEscape(tok, false, false), false, false),
		"xml":                xmlEscape(tok),
		"html":               strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(tok),
		"url then json":      jsonEscape(url.QueryEscape(tok), false, true),
		"base64 then json /": jsonEscape(base64.StdEncoding.EncodeToString([]byte(tok)), false, true),
	}
	for name, enc := range cases {
		t.Run(name, func(t *testing.T) {
			in := "before " + enc + " after"
			out := r.String(in)
			assert.Equal(t, "before [REDACTED:KINTONE_TOKEN] after", out)
			// Also glued inside a longer word.
			out = r.String("xx" + enc + "yy")
			assert.Equal(t, "xx[REDACTED:KINTONE_TOKEN]yy", out)
		})
	}
}

func TestRedactBase64InsideLongerBase64(t *testing.T) {
	secret := "s3cretPassw0rd!"
	r := New(map[string]string{"DB_PASSWORD": secret}, nil)
	for _, user := range []string{"u", "us", "usr", "operator"} { // every alignment mod 3
		basic := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+secret+"-trailer"))
		out := r.String(basic)
		assert.Contains(t, out, "[REDACTED:DB_PASSWORD]", "user %q", user)
		// What is left decodes to nothing containing the secret.
		assert.NotContains(t, out, base64.StdEncoding.EncodeToString([]byte(secret))[:8])
	}
}

func TestRedactSecretSplitAcrossJSONEscapes(t *testing.T) {
	secret := "abcdefgh1234"
	r := New(map[string]string{"X_TOKEN": secret}, nil)
	// Every character of the secret spelled differently: no byte pattern can list these.
	spelled := `abc\u0064ef\u0067h12\u00334`
	t.Run("text", func(t *testing.T) {
		out := r.String(`log line {"msg":"` + spelled + `"} end`)
		assert.Equal(t, `log line {"msg":"[REDACTED:X_TOKEN]"} end`, out)
	})
	t.Run("json document", func(t *testing.T) {
		out, err := r.JSON([]byte(`{"msg":"pre ` + spelled + ` post","n":1}`))
		require.NoError(t, err)
		var v map[string]any
		require.NoError(t, json.Unmarshal(out, &v))
		assert.Equal(t, "pre [REDACTED:X_TOKEN] post", v["msg"])
		assert.NotContains(t, string(out), "0064")
	})
	t.Run("secret with characters JSON escapes, in a JSON string in a JSON string", func(t *testing.T) {
		s2 := `pa"ss\word`
		r := New(map[string]string{"P_PASSWORD": s2}, nil)
		inner, _ := json.Marshal(map[string]string{"pw": s2})
		outer, _ := json.Marshal(map[string]string{"stdout": string(inner)})
		out := r.String(string(outer))
		assert.NotContains(t, out, `pa\\\"ss`)
		assert.Contains(t, out, "[REDACTED:P_PASSWORD]")
	})
}

func TestRedactSubstringSecretsLongestFirst(t *testing.T) {
	r := New(map[string]string{"LONG_TOKEN": "abcdefgh12345678", "SHORT_TOKEN": "defgh123"}, nil)
	assert.Equal(t, "x [REDACTED:LONG_TOKEN] y", r.String("x abcdefgh12345678 y"))
	assert.Equal(t, "x [REDACTED:SHORT_TOKEN] y", r.String("x defgh123 y"))
	// A secret overlapping the start of another: nothing of either may survive.
	r2 := New(map[string]string{"A_TOKEN": "abcdefgh12345678", "B_TOKEN": "zZzabcde"}, nil)
	out := r2.String("-zZzabcdefgh12345678-")
	assert.Equal(t, "-[REDACTED:A_TOKEN]-", out)
}

func TestRedactEmptySecretIgnored(t *testing.T) {
	r := New(map[string]string{"EMPTY_TOKEN": "", "REAL_TOKEN": "realvalue123"}, nil)
	assert.Equal(t, "hello world", r.String("hello world"))
	assert.Equal(t, "[REDACTED:REAL_TOKEN]", r.String("realvalue123"))
	r.AddSecret("LATE_TOKEN", "")
	assert.Equal(t, "hello", r.String("hello"))
}

func TestRedactIdempotentAndPlaceholdersSafe(t *testing.T) {
	// A secret that occurs inside the placeholder text itself.
	r := New(map[string]string{"A_TOKEN": "DACTED:B_T", "B_TOKEN": "s3cr3t-value"}, nil)
	once := r.String("x s3cr3t-value DACTED:B_T y")
	assert.Equal(t, "x [REDACTED:B_TOKEN] [REDACTED:A_TOKEN] y", once)
	assert.Equal(t, once, r.String(once))
}

func TestRedactAddSecretAtRunTime(t *testing.T) {
	r := New(nil, nil)
	assert.Equal(t, "captured-token-1", r.String("captured-token-1"))
	r.AddSecret("CAPTURED_TOKEN", "captured-token-1")
	assert.Equal(t, "[REDACTED:CAPTURED_TOKEN]", r.String("captured-token-1"))
}

func TestRedactAppIDsOnlyInAppPositions(t *testing.T) {
	r := New(nil, map[string]string{"7": "state", "4257": "audit"})
	cases := []struct{ in, want string }{
		{"GET /k/v1/records.json?app=7&query=x", "GET /k/v1/records.json?app=app:state&query=x"},
		{"https://t.cybozu.com/k/4257/show#record=7", "https://t.cybozu.com/k/app:audit/show#record=7"},
		{"/app/7", "/app/app:state"},
		{`{"app":"7","id":"7"}`, `{"app":"app:state","id":"7"}`},
		{`log {"app": 7, "revision": 7}`, `log {"app": "app:state", "revision": 7}`},
		{`{"app": 7, "revision": 7}`, `{"app": "app:state", "revision": 7}`},
		{`{"app": 7, "token": "x"}`, `{"app":"app:state","token":"[REDACTED:TOKEN]"}`}, // JSON with a credential key: key-aware, compacted
		{"deleted 3 records from app 4257", "deleted 3 records from app app:audit"},
		{`{\"app\":7}`, `{\"app\":\"app:state\"}`},
		{`{\"app\":\"4257\"}`, `{\"app\":\"app:audit\"}`},
		{"KSQL_FLOWNET_STATE_APP_ID=4257", "KSQL_FLOWNET_STATE_APP_ID=app:audit"},
		{"stateAppId: 7", "stateAppId: app:state"},
		{"node cli --app 7 --file x", "node cli --app app:state --file x"},
		{"q=app%3D7", "q=app%3Dapp:state"},
		// Not app positions: untouched.
		{"app=17 app=70 app=7x", "app=17 app=70 app=7x"},
		{`"duration_ms": 7, took 7 ms, revision=7, id=7`, `"duration_ms": 7, took 7 ms, revision=7, id=7`},
		{"http://127.0.0.1:7/k/v1/record.json", "http://127.0.0.1:7/k/v1/record.json"},
		{"v7 /k/v1/7 #7 07 app=07", "v7 /k/v1/7 #7 07 app=07"},
		{"happy=7 application: 7 happ 7 apple 7", "happy=7 application: 7 happ 7 apple 7"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, r.String(c.in), "input %q", c.in)
	}
}

func TestRedactJSONFields(t *testing.T) {
	r := New(map[string]string{"K_TOKEN": "tok-123456789"}, map[string]string{"7": "state", "4257": "request"})
	in := `{"zeta":1,"app":7,"apps":["7","8"],"record":{"reason":{"type":"MULTI_LINE_TEXT","value":"KSQL_FLOW_TEST_x:label"},` +
		`"status_reason":"ALL_SUCCESS_NOT_SATISFIED"},"reason":"free text","headers":{"X-Cybozu-API-Token":"captured-at-runtime","Accept":"*/*"},` +
		`"access_token":["a","b"],"n":12,"tok-123456789":true,"url":"/k/v1/record.json?app=4257","count":4257,"alpha":null}`
	out, err := r.JSON([]byte(in))
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, json.Unmarshal(out, &v), string(out))
	assert.Equal(t, "app:state", v["app"])
	assert.Equal(t, []any{"app:state", "8"}, v["apps"])
	rec := v["record"].(map[string]any)
	assert.Equal(t, r.Reason("KSQL_FLOW_TEST_x:label"), rec["reason"].(map[string]any)["value"])
	assert.Equal(t, "MULTI_LINE_TEXT", rec["reason"].(map[string]any)["type"])
	assert.Equal(t, "ALL_SUCCESS_NOT_SATISFIED", rec["status_reason"])
	assert.Equal(t, r.Reason("free text"), v["reason"])
	assert.Equal(t, "[REDACTED:X-CYBOZU-API-TOKEN]", v["headers"].(map[string]any)["X-Cybozu-API-Token"])
	assert.Equal(t, "*/*", v["headers"].(map[string]any)["Accept"])
	assert.Equal(t, []any{"[REDACTED:ACCESS_TOKEN]", "[REDACTED:ACCESS_TOKEN]"}, v["access_token"])
	assert.Equal(t, true, v["[REDACTED:K_TOKEN]"])
	assert.Equal(t, "/k/v1/record.json?app=app:request", v["url"])
	assert.Equal(t, float64(4257), v["count"], "a number not under an app key is kept")
	assert.Nil(t, v["alpha"])
	// Key order is kept.
	assert.Less(t, strings.Index(string(out), `"zeta"`), strings.Index(string(out), `"alpha"`))
	assert.NotContains(t, string(out), "KSQL_FLOW_TEST_x:label")
	assert.NotContains(t, string(out), "captured-at-runtime")

	_, err = r.JSON([]byte(`{"a":`))
	assert.Error(t, err)
}

// A variable named like a secret whose value is a setting (issue 42: FEATURE_TOKEN_REFRESH=true,
// CACHE_TOKEN_TTL=1) is not a secret: JSON keeps its numbers, literals and keys, and the
// warning names the variable, never the value.
func TestSettingsNamedLikeSecretsAreNotSecrets(t *testing.T) {
	r := New(map[string]string{"FEATURE_TOKEN_REFRESH": "true", "CACHE_TOKEN_TTL": "1", "PIN_PASSWORD": "48291377",
		"TOKEN_ROTATION": "2026-12-06T10:00:00Z", "TOKEN_MODE": "SLIDING_WINDOW", "REAL_TOKEN": "Zm9vYmFy-token-0123"}, nil)
	in := `{"schema_version":1,"ok":true,"n":1148291377,"at":"2026-12-06T10:00:00Z","mode":"SLIDING_WINDOW","t":"x Zm9vYmFy-token-0123 y"}`
	out, err := r.JSON([]byte(in))
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, json.Unmarshal(out, &v), string(out))
	assert.Equal(t, map[string]any{"schema_version": float64(1), "ok": true, "n": float64(1148291377), "at": "2026-12-06T10:00:00Z",
		"mode": "SLIDING_WINDOW", "t": "x [REDACTED:REAL_TOKEN] y"}, v)
	w := strings.Join(r.Warnings(), "\n")
	for _, name := range []string{"FEATURE_TOKEN_REFRESH", "CACHE_TOKEN_TTL", "PIN_PASSWORD", "TOKEN_ROTATION", "TOKEN_MODE"} {
		assert.Contains(t, w, name)
	}
	assert.NotContains(t, w, "REAL_TOKEN")
	assert.NotContains(t, w, "48291377")
	assert.NotContains(t, w, "SLIDING_WINDOW")
	assert.Len(t, r.Warnings(), 5)
}

func TestNotSecret(t *testing.T) {
	for v, want := range map[string]string{
		"true": "shorter than 8 characters", "1": "shorter than 8 characters", "": "shorter than 8 characters",
		"86400000": "a number", "-1.5e+10": "a number", "0x1F2E3D4C": "a number", "1_000_000": "a number",
		"1h30m0s5ms": "a duration", "2026-12-06": "a date or time", "2026-12-06T10:00:00+09:00": "a date or time",
		"2026-12-06 10:00:00": "a date or time", "10:00:00.123": "a date or time",
		"disabled": "a one-case word of up to 16 letters", "SLIDING_WINDOW": "a one-case word of up to 16 letters", "read-only": "a one-case word of up to 16 letters",
		// Secrets.
		"Zm9vYmFyLXRva2VuLTAxMjM0NTY3ODk": "", "s3cr3t-value": "", "Password": "", "p@ss word/with+chars": "",
		"correcthorsebatterystaple": "", "abcdefgh12345678": "", "12345678x": "",
	} {
		assert.Equal(t, want, NotSecret(v), "value %q", v)
	}
}

func TestReason(t *testing.T) {
	r := New(nil, nil)
	assert.Equal(t, "", r.Reason(""))
	body := "KSQL_FLOW_TEST_261129_ab12_p2-16:stop please"
	red := r.Reason(body)
	assert.Regexp(t, `^\[REDACTED:REASON sha256:[0-9a-f]{12}\]$`, red)
	assert.NotEqual(t, red, r.Reason(body+"!"))
	r.AddReason(body)
	assert.Equal(t, "poller accepted "+red+" ok", r.String("poller accepted "+body+" ok"))
}

func TestArgv(t *testing.T) {
	r := New(map[string]string{"A_TOKEN": "env-token-v4lue"}, map[string]string{"4257": "state"})
	got := r.Argv([]string{"node", "cli", "--app", "4257", "--api-token", "runtime-captured", "--x=env-token-v4lue", "--count", "4257", "--token=abc"})
	assert.Equal(t, []string{"node", "cli", "--app", "app:state", "--api-token", "[REDACTED:API-TOKEN]", "--x=[REDACTED:A_TOKEN]", "--count", "4257", "--token=abc"}, got)
	assert.Nil(t, r.Argv(nil))
}

func TestTail(t *testing.T) {
	secret := "0123456789abcdefXYZ"
	r := New(map[string]string{"T_TOKEN": secret}, nil)
	// A tail that starts in the middle of a secret.
	assert.Equal(t, "[REDACTED:T_TOKEN] rest", r.Tail(secret[7:]+" rest", 100))
	// Cut to the limit keeping the end, never inside a placeholder.
	long := strings.Repeat("a", 50) + secret + "bc"
	out := r.Tail(long, 10)
	assert.Equal(t, "bc", out, "the cut fell inside the placeholder and moved past it")
	out = r.Tail(strings.Repeat("x", 20000), 8<<10)
	assert.Len(t, out, 8<<10)
	// UTF-8 is not split.
	out = r.Tail(strings.Repeat("é", 10), 5)
	assert.Equal(t, "éé", out)
}

func TestRedactJSONLinesInText(t *testing.T) {
	r := New(nil, map[string]string{"4257": "state"})
	in := "start\n{\"X-Cybozu-API-Token\":\"captured\",\"app\":4257}\n  {\"record\":{\"reason\":{\"value\":\"stop it\"}}}\nplain Token line app=4257\n"
	out := r.String(in)
	assert.Equal(t, "start\n{\"X-Cybozu-API-Token\":\"[REDACTED:X-CYBOZU-API-TOKEN]\",\"app\":\"app:state\"}\n"+
		"{\"record\":{\"reason\":{\"value\":\""+r.Reason("stop it")+"\"}}}\nplain Token line app=app:state\n", out)
	// A pretty-printed document stays pretty.
	pretty := "{\n  \"reason\": \"stop it\",\n  \"n\": 1\n}\n"
	assert.Equal(t, "{\n  \"reason\": \""+r.Reason("stop it")+"\",\n  \"n\": 1\n}\n", r.String(pretty))
	// A document cut in the middle (a tail) falls back to the text rules.
	cut := `"reason":"stop it"}, {"app":4257}`
	assert.Equal(t, `"reason":"stop it"}, {"app":"app:state"}`, r.String(cut))
}

// Secrets added while other goroutines redact: each value is redacted by every call that
// starts after its AddSecret returned, whatever else is being added at the time (go test
// -race checks the locking).
func TestRedactorAddWhileRedacting(t *testing.T) {
	r := New(nil, nil)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				v := fmt.Sprintf("w%d-token-%03d-Zx9q", w, i)
				r.AddSecret(fmt.Sprintf("TOKEN_W%d_%d", w, i), v)
				out := r.String("before " + v + " after")
				if strings.Contains(out, v) {
					t.Errorf("%q survived its own AddSecret: %q", v, out)
					return
				}
			}
		}()
	}
	wg.Wait()
	out := r.String("w0-token-000-Zx9q w3-token-049-Zx9q")
	assert.NotContains(t, out, "token-0")
}

// A token a process printed across two lines (issue 42): the stored tail must not hold it
// whole, whatever the line ending, and the lines stay lines.
func TestRedactSecretSplitAcrossLineBreak(t *testing.T) {
	secret := "Zm9vYmFy-token-0123456789"
	r := New(map[string]string{"W_TOKEN": secret}, nil)
	for _, br := range []string{"\n", "\r\n", "\n\n"} {
		in := "writer token " + secret[:9] + br + secret[9:] + " end\nnext line"
		out := r.Tail(in, 8<<10)
		assert.Equal(t, "writer token [REDACTED:W_TOKEN]"+br+" end\nnext line", out, "break %q", br)
		assert.Equal(t, out, r.String(out), "redacting twice changes nothing")
	}
	// Inside a JSON document's string (a child's --json output): the escaped break.
	out, err := r.JSON([]byte(`{"stderr_tail":"a ` + secret[:5] + `\n` + secret[5:] + ` b","n":1}`))
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, json.Unmarshal(out, &v))
	assert.Equal(t, "a [REDACTED:W_TOKEN]\n b", v["stderr_tail"])
	// Text without the split is untouched.
	assert.Equal(t, "Zm9vY\nmFy other", r.String("Zm9vY\nmFy other"))
}

// JSONText applies the text rules to every string and no rule by key: a failure "reason" of
// flowtest's own stays readable, a secret in it does not.
func TestJSONText(t *testing.T) {
	r := New(map[string]string{"K_TOKEN": "tok-123456789"}, map[string]string{"4257": "state"})
	out, err := r.JSONText([]byte(`{"reason":"step failed: tok-123456789 refused","token_count":2,"n":1,"ok":true,"url":"/k/v1/records.json?app=4257"}`))
	require.NoError(t, err)
	assert.Equal(t, "{\n  \"reason\": \"step failed: [REDACTED:K_TOKEN] refused\",\n  \"token_count\": 2,\n  \"n\": 1,\n  \"ok\": true,\n  \"url\": \"/k/v1/records.json?app=app:state\"\n}\n", string(out))
	_, err = r.JSONText([]byte(`{"a":`))
	assert.Error(t, err)
}
