package redact

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
