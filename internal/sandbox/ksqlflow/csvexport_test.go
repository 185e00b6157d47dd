package ksqlflow

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteExportsFailClosed(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "report.csv")
	require.NoError(t, os.WriteFile(target, []byte("old"), 0o644))
	temps := map[string]*Table{"report": {Cols: []string{"test_key", "test_value"}, Rows: [][]string{{"k1", "v,1"}, {"k2", "\u301cwave"}}}}

	_, err := writeExports([]exportSink{{Name: "report", Path: target}}, temps, "sjis")
	require.Error(t, err, "U+301C has no Shift_JIS code")
	old, _ := os.ReadFile(target)
	assert.Equal(t, "old", string(old), "the old file is untouched")
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 1, "no temp file is left")

	rc, err := writeExports([]exportSink{{Name: "report", Path: target}}, temps, "utf8")
	require.NoError(t, err)
	data, _ := os.ReadFile(target)
	assert.Equal(t, "test_key,test_value\r\nk1,\"v,1\"\r\nk2,\u301cwave\r\n", string(data), "RFC 4180, CRLF, no BOM")
	assert.Equal(t, InputFile{Name: "report", SHA256: rc[0].SHA256, Bytes: int64(len(data)), Rows: 2, Encoding: "utf8"}, rc[0])
	assert.Len(t, rc[0].SHA256, 64)
}
