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

// The leak scan finds a secret split across a line break, raw or as a JSON escape (a record's
// stderr tail), and names where it starts (issue 42).
func TestVerifyFindsSecretSplitAcrossLineBreak(t *testing.T) {
	secret := "Zm9vYmFy-token-0123456789"
	secrets := map[string]string{"W_TOKEN": secret}
	for name, content := range map[string]string{
		"raw LF":        "pre " + secret[:10] + "\n" + secret[10:] + " post",
		"raw CRLF":      "pre " + secret[:10] + "\r\n" + secret[10:] + " post",
		"json \\n":      `{"stderr_tail":"pre ` + secret[:10] + `\n` + secret[10:] + ` post"}`,
		"json \\r\\n":   `{"stderr_tail":"pre ` + secret[:10] + `\r\n` + secret[10:] + ` post"}`,
		"three lines":   "pre " + secret[:4] + "\n" + secret[4:12] + "\n" + secret[12:],
		"base64, split": "pre " + b64(secret)[:20] + "\n" + b64(secret)[20:],
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "x.json"), []byte(content), 0o644))
			leaks, err := Verify(dir, secrets, nil)
			require.NoError(t, err)
			require.Len(t, leaks, 1)
			assert.Equal(t, "x.json", leaks[0].File)
			assert.Equal(t, int64(strings.Index(content, "pre ")+4), leaks[0].Offset)
			assert.Contains(t, leaks[0].Kind, "W_TOKEN")
		})
	}
	// The same lines, redacted, are clean.
	dir := t.TempDir()
	red := New(secrets, nil)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.txt"), []byte(red.String("pre "+secret[:10]+"\n"+secret[10:]+" post")), 0o644))
	leaks, err := Verify(dir, secrets, nil)
	require.NoError(t, err)
	assert.Empty(t, leaks)
}

// VerifyFiles scans files outside an archive (the --format files) and names each as given;
// a value that is not a secret (NotSecret) is never a leak.
func TestVerifyFiles(t *testing.T) {
	dir := t.TempDir()
	junit := filepath.Join(dir, "out-a.xml")
	clean := filepath.Join(dir, "out-b.xml")
	require.NoError(t, os.WriteFile(junit, []byte(`<failure message="stderr: Zm9vYmFy-token-0123456789"/>`), 0o644))
	require.NoError(t, os.WriteFile(clean, []byte(`<testsuite tests="1" failures="0" time="true"/>`), 0o644))
	secrets := map[string]string{"W_TOKEN": "Zm9vYmFy-token-0123456789", "FEATURE_TOKEN_REFRESH": "true"}
	leaks, err := VerifyFiles([]string{junit, clean}, secrets, nil)
	require.NoError(t, err)
	require.Len(t, leaks, 1)
	assert.Equal(t, filepath.ToSlash(junit), leaks[0].File)
	assert.Equal(t, int64(len(`<failure message="stderr: `)), leaks[0].Offset)
	_, err = VerifyFiles([]string{filepath.Join(dir, "missing.xml")}, secrets, nil)
	assert.ErrorContains(t, err, "missing.xml")
}
