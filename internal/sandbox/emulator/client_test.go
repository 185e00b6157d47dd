package emulator

import (
	"context"
	"net/http"
	"testing"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startTest starts an emulator over HTTPS for one test and closes it afterwards.
func startTest(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := Start(context.Background(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

func appInfo(t testing.TB, s *Server, role string) AppInfo {
	t.Helper()
	for _, a := range s.Apps() {
		if a.Role == role {
			return a
		}
	}
	t.Fatalf("no app with role %q", role)
	return AppInfo{}
}

// goClient is the shared kintoneapi client trusting the emulator's CA, with the given
// permission set's token for every app.
func goClient(t testing.TB, s *Server, set string) *kintoneapi.Client {
	t.Helper()
	hc, err := kintoneapi.HTTPClientWithCA(s.CAFile())
	require.NoError(t, err)
	toks := map[string]string{}
	for _, a := range s.Apps() {
		if tok, ok := a.Tokens[set]; ok {
			toks[a.ID] = tok
		}
	}
	return kintoneapi.New(s.BaseURL(), hc, toks)
}

func TestGoClientOverHTTPS(t *testing.T) {
	s := startTest(t, Options{})
	require.Regexp(t, `^https://127\.0\.0\.1:\d+$`, s.BaseURL())
	ctx := context.Background()
	c := goClient(t, s, "full")
	csv := appInfo(t, s, "csv").ID

	id, rev, err := c.AddRecord(ctx, csv, kintoneapi.Values(map[string]any{"test_key": "k1", "test_value": "v1"}))
	require.NoError(t, err)
	assert.Equal(t, "1", rev)

	rec, err := c.GetRecord(ctx, csv, id)
	require.NoError(t, err)
	assert.Equal(t, "v1", rec.Str("test_value"))
	assert.Equal(t, id, rec.ID())
	assert.Equal(t, "1", rec.Revision())
	assert.Equal(t, "CREATOR", rec[codeCreator].Type)

	rev2, err := c.UpdateRecord(ctx, csv, id, kintoneapi.Values(map[string]any{"test_value": "v2"}), "1")
	require.NoError(t, err)
	assert.Equal(t, "2", rev2)

	_, err = c.UpdateRecord(ctx, csv, id, kintoneapi.Values(map[string]any{"test_value": "v3"}), "1")
	assert.True(t, kintoneapi.IsCode(err, "GAIA_CO02"), "stale revision: %v", err)
	assert.Equal(t, http.StatusConflict, kintoneapi.StatusOf(err))

	rev3, err := c.UpdateByKey(ctx, csv, "test_key", "k1", kintoneapi.Values(map[string]any{"test_value": "v3"}), "2")
	require.NoError(t, err)
	assert.Equal(t, "3", rev3)

	_, _, err = c.AddRecord(ctx, csv, kintoneapi.Values(map[string]any{"test_key": "k1"}))
	assert.True(t, kintoneapi.IsCode(err, "CB_VA01"), "duplicate: %v", err)

	recs, err := c.GetRecords(ctx, csv, `test_key in ("k1", "nope") order by $id asc`, nil)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, "v3", recs[0].Str("test_value"))

	// The seeded business apps answer the harness's 案件管理 query.
	deals := appInfo(t, s, "deals").ID
	n, err := c.Count(ctx, deals, `受注予定日 >= "2026-08-01" and 受注予定日 < "2026-09-01"`)
	require.NoError(t, err)
	assert.Equal(t, 20, n)
}
