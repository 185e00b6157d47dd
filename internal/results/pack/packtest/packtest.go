// Package packtest is for tests only: rewriting a pack (a results archive sealed by
// internal/results/pack) entry by entry, for the tests that tamper with one to see it refused — pack's
// own and the command line's.
package packtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Entry is one file of a pack.
type Entry struct {
	Header *tar.Header
	Data   []byte
}

// Entries are the files of a pack, in their order in the tar.
func Entries(t testing.TB, pack string) []Entry {
	t.Helper()
	f, err := os.Open(pack)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	var entries []Entry
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return entries
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		entries = append(entries, Entry{hdr, data})
	}
}

// Rewrite rewrites a pack entry by entry, letting edit change (or drop, returning nil)
// each file's bytes, and appending extra files; the gzip is made afresh, so only the tar
// content differs.
func Rewrite(t testing.TB, src, dst string, edit func(name string, data []byte) []byte, extra map[string]string) {
	t.Helper()
	var out bytes.Buffer
	gw := gzip.NewWriter(&out)
	tw := tar.NewWriter(gw)
	folder := ""
	for _, e := range Entries(t, src) {
		hdr, data := e.Header, e.Data
		folder = strings.SplitN(hdr.Name, "/", 2)[0]
		if edit != nil {
			data = edit(hdr.Name, data)
		}
		if data == nil {
			continue
		}
		hdr.Size = int64(len(data))
		require.NoError(t, tw.WriteHeader(hdr))
		_, err := tw.Write(data)
		require.NoError(t, err)
	}
	for name, body := range extra {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: folder + "/" + name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gw.Close())
	require.NoError(t, os.WriteFile(dst, out.Bytes(), 0o644))
}
