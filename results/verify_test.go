package results

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestVerifyFindsPlantedLeaksInEachEncoding(t *testing.T) {
	secret := `tok/en+"val"&<x>`
	secrets := map[string]string{"KSQL_FLOWNET_STATE_API_TOKEN": secret}
	plants := map[string]string{
		"raw":                    secret,
		"url-encoded":            url.QueryEscape(secret),
		"base64":                 b64(secret),
		"base64 in longer":       b64("user:" + secret + ":tail"),
		"json-escaped":           jsonEscape(secret, false, false),
		"json-escaped twice":     jsonEscape(jsonEscape(secret, false, false), false, false),
		"xml-escaped":            xmlEscape(secret),
		"raw app id (field app)": `{"app": 4257}`,
		"raw app id (path)":      "see https://x.cybozu.com/k/4257/show",
	}
	// A value whose every character is spelled as a \u escape.
	var sp strings.Builder
	for _, r := range secret {
		fmt.Fprintf(&sp, `\u%04x`, r)
	}
	plants["\\u escapes"] = `{"m":"` + sp.String() + `"}`

	for name, content := range plants {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "scenarios"), 0o755))
			prefix := "clean prefix text\n"
			require.NoError(t, os.WriteFile(filepath.Join(dir, "scenarios", "x.json"), []byte(prefix+content+"\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("clean\n"), 0o644))
			leaks, err := Verify(dir, secrets, []string{"4257"})
			require.NoError(t, err)
			require.NotEmpty(t, leaks, "planted %s not found", name)
			l := leaks[0]
			assert.Equal(t, "scenarios/x.json", l.File)
			assert.GreaterOrEqual(t, l.Offset, int64(len(prefix)))
			assert.NotContains(t, l.String(), secret)
			assert.NotContains(t, l.Kind, "tok/en")
			if strings.HasPrefix(name, "raw app id") {
				assert.Contains(t, l.Kind, "raw app id")
			} else {
				assert.Contains(t, l.Kind, "KSQL_FLOWNET_STATE_API_TOKEN")
			}
		})
	}
}

func TestVerifyExactOffsetAndCredentialKeys(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.json"), []byte(`{"a":"0123456789`+"s3cr3t-token-value"+`"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other.json"), []byte(`{"headers":{"X-Cybozu-API-Token":"captured","ok":"[REDACTED:X]"}}`), 0o644))
	leaks, err := Verify(dir, map[string]string{"A_TOKEN": "s3cr3t-token-value", "EMPTY_TOKEN": ""}, nil)
	require.NoError(t, err)
	require.Len(t, leaks, 2)
	assert.Equal(t, Leak{File: "other.json", Offset: 33, Kind: "unredacted value under credential key X-Cybozu-API-Token"}, leaks[0])
	assert.Equal(t, Leak{File: "run.json", Offset: 16, Kind: "secret A_TOKEN (raw)"}, leaks[1])
}

func TestVerifyCleanArchiveAndPlaceholders(t *testing.T) {
	red := NewRedactor(map[string]string{"A_TOKEN": "REDACTED"}, map[string]string{"7": "state"})
	a, err := Create(t.TempDir(), "x", time.Now(), red)
	require.NoError(t, err)
	require.NoError(t, a.WriteFile("log.txt", []byte("REDACTED app=7 took 17 ms, 7 rows")))
	leaks, err := Verify(a.Dir(), map[string]string{"A_TOKEN": "REDACTED"}, []string{"7"})
	require.NoError(t, err)
	assert.Empty(t, leaks)

	_, err = Verify(filepath.Join(a.Dir(), "log.txt"), nil, nil)
	assert.Error(t, err, "a file is not an archive folder")
}

func TestVerifyMain(t *testing.T) {
	dir := finishedArchive(t)
	env := map[string]string{"X_TOKEN": "leaky-token-value", "HOME": "/root"}
	var out, errb strings.Builder
	assert.Equal(t, 0, VerifyMain(dir, env, []string{"4257"}, &out, &errb), out.String()+errb.String())
	assert.Contains(t, out.String(), "no leaks")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "f.txt"), []byte("x leaky-token-value"), 0o644))
	out.Reset()
	assert.Equal(t, 1, VerifyMain(dir, env, nil, &out, &errb))
	assert.Equal(t, "f.txt:2: secret X_TOKEN (raw)\n", out.String())
	assert.NotContains(t, out.String()+errb.String(), "leaky-token-value")

	assert.Equal(t, 2, VerifyMain(filepath.Join(dir, "nope"), env, nil, &out, &errb))

	// A folder that is no archive at all is not "clean".
	out.Reset()
	assert.Equal(t, 1, VerifyMain(t.TempDir(), env, nil, &out, &errb))
	assert.Contains(t, out.String(), "integrity: run.json: missing")
}
