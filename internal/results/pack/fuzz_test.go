package pack

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/internal/archivetest"
)

// tarOf is a tar of files in order, with a SHA256SUMS (in folder f) that lists them all when
// sums is true.
func tarOf(t testing.TB, files [][2]string, sums bool) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name, body string) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	var list strings.Builder
	for _, f := range files {
		add(f[0], f[1])
		s := sha256.Sum256([]byte(f[1]))
		list.WriteString(hex.EncodeToString(s[:]) + "  " + strings.TrimPrefix(f[0], "f/") + "\n")
	}
	if sums {
		add("f/"+SumsFile, list.String())
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzVerifyPack: no tar inside a pack's gzip makes VerifyPack fail or panic, nor the schema
// check of a pack (ValidatePack): whatever the
// entries (names that clash, escape, repeat; types; sizes), it answers with problems, each one
// line; a pack it finds no problem in extracted exactly the files its SHA256SUMS lists, inside
// the extraction folder, with those digests.
//
//	go test -run '^$' -fuzz '^FuzzVerifyPack$' -fuzztime 2m ./results/pack
func FuzzVerifyPack(f *testing.F) {
	dir := archivetest.Finished(f)
	packed, err := Pack(dir, filepath.Join(f.TempDir(), "a.tar.gz"))
	if err != nil {
		f.Fatal(err)
	}
	if raw, err := os.ReadFile(packed); err == nil {
		if gz, err := gzip.NewReader(bytes.NewReader(raw)); err == nil {
			if tarBytes, err := io.ReadAll(gz); err == nil {
				f.Add(tarBytes)
			}
		}
	}
	f.Add(tarOf(f, [][2]string{{"f/run.json", "{}"}, {"f/scenarios/a.json", "{}"}}, true))
	f.Add(tarOf(f, [][2]string{{"f/a", "1"}, {"f/a/b", "2"}}, true))    // a file, then a folder of the same name
	f.Add(tarOf(f, [][2]string{{"f/a/b", "1"}, {"f/a", "2"}}, true))    // a folder, then a file of the same name
	f.Add(tarOf(f, [][2]string{{"f/a", "1"}, {"f/./a", "2"}}, true))    // one name written twice
	f.Add(tarOf(f, [][2]string{{"f/x", "1"}, {"g/x", "2"}}, true))      // two folders
	f.Add(tarOf(f, [][2]string{{"f/../x", "1"}, {"/f/x", "2"}}, false)) // escapes
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, tarBytes []byte) {
		tmp := t.TempDir()
		p := filepath.Join(tmp, "p.tar.gz")
		var gzb bytes.Buffer
		gw := gzip.NewWriter(&gzb)
		gw.Write(tarBytes)
		gw.Close()
		if err := os.WriteFile(p, gzb.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(tmp, "x")
		if err := os.Mkdir(out, 0o755); err != nil {
			t.Fatal(err)
		}
		// The schema check of a pack reads the same entries; a corrupt tar is its error.
		if probs, err := results.ValidatePack(p); err == nil {
			for _, pr := range probs {
				if pr.File == "" || strings.Contains(pr.Message, "\n") {
					t.Fatalf("schema problem without a file or not one line: %+v", pr)
				}
			}
		}
		pc, err := VerifyPack(p, "", out)
		if err != nil {
			t.Fatalf("a pack's content made verify fail instead of naming a problem: %v", err)
		}
		for _, pr := range pc.Problems {
			if strings.Contains(pr, "\n") || pr == "" {
				t.Fatalf("problem is not one line: %q", pr)
			}
		}
		if len(pc.Problems) > 0 {
			return
		}
		listed := map[string]bool{}
		err = filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(out, path)
			if err != nil || strings.HasPrefix(rel, "..") || !d.Type().IsRegular() {
				t.Fatalf("extracted %s (%v)", path, d.Type())
			}
			listed[filepath.ToSlash(rel)] = true
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(listed) != pc.Files {
			t.Fatalf("no problem, %d files in the pack, %d extracted", pc.Files, len(listed))
		}
	})
}
