package pack

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/internal/archivetest"
	"github.com/ksqlflow/flowtest/internal/results/pack/packtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPackAndVerifyRoundTrip(t *testing.T) {
	dir := archivetest.Finished(t)
	pack := filepath.Join(t.TempDir(), "evidence.tar.gz")
	sum, err := Pack(dir, pack)
	require.NoError(t, err)
	assert.Len(t, sum, 64)
	detached, err := os.ReadFile(pack + ".sha256")
	require.NoError(t, err)
	assert.Equal(t, sum+"  evidence.tar.gz\n", string(detached))

	// Reproducible: the same folder packs to the same bytes.
	again := filepath.Join(t.TempDir(), "again.tar.gz")
	sum2, err := Pack(dir, again)
	require.NoError(t, err)
	assert.Equal(t, sum, sum2)

	pc, err := VerifyPack(pack, "", t.TempDir())
	require.NoError(t, err)
	assert.Empty(t, pc.Problems)
	assert.Equal(t, sum, pc.Detached)
	assert.Equal(t, filepath.Base(dir), pc.Folder)
	assert.Equal(t, 9, pc.Files, "run.json, README.md, summary.md, cucumber.json, junit.xml, messages.ndjson, index.html, two scenario files")

	var out, errb bytes.Buffer
	assert.Equal(t, 0, VerifyMainWith(pack, VerifyOptions{}, &out, &errb), out.String()+errb.String())
	assert.Contains(t, out.String(), "sha256 "+sum)

	// The manifest lists every file with its digest, sha256sum style.
	ex := t.TempDir()
	_, err = VerifyPack(pack, "", ex)
	require.NoError(t, err)
	readme, err := results.FileSHA256(filepath.Join(ex, "README.md"))
	require.NoError(t, err)
	want, err := results.FileSHA256(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	assert.Equal(t, want, readme)
}

// One changed byte inside a file of the pack is found and the file named; so are a file
// removed, a file added, a changed pack against its detached digest and a corrupt gzip.
func TestVerifyPackNamesTheChangedFile(t *testing.T) {
	dir := archivetest.Finished(t)
	pack := filepath.Join(t.TempDir(), "a.tar.gz")
	sum, err := Pack(dir, pack)
	require.NoError(t, err)

	tampered := filepath.Join(t.TempDir(), "t.tar.gz")
	packtest.Rewrite(t, pack, tampered, func(name string, data []byte) []byte {
		if strings.HasSuffix(name, "scenarios/p2-16-02.json") {
			i := bytes.Index(data, []byte(`"failed"`))
			require.Positive(t, i)
			data = append([]byte(nil), data...)
			data[i+1] = 'F' // one byte: "failed" becomes "Failed"
		}
		return data
	}, nil)
	pc, err := VerifyPack(tampered, "", t.TempDir())
	require.NoError(t, err)
	require.Len(t, pc.Problems, 1, pc.Problems)
	assert.Contains(t, pc.Problems[0], "scenarios/p2-16-02.json: changed")

	// Through the command, with the original detached digest: both the manifest and the
	// digest say so, and the file is named.
	var out, errb bytes.Buffer
	assert.Equal(t, 1, VerifyMainWith(tampered, VerifyOptions{SHA256: sum}, &out, &errb))
	assert.Contains(t, out.String(), "manifest: scenarios/p2-16-02.json: changed")
	assert.Contains(t, out.String(), "the detached digest says "+sum)

	dropped := filepath.Join(t.TempDir(), "d.tar.gz")
	packtest.Rewrite(t, pack, dropped, func(name string, data []byte) []byte {
		if strings.HasSuffix(name, "/junit.xml") {
			return nil
		}
		return data
	}, map[string]string{"extra.txt": "added later"})
	pc, err = VerifyPack(dropped, "", "")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"extra.txt: not listed in SHA256SUMS (added after packing)", "junit.xml: listed in SHA256SUMS but missing"}, pc.Problems)

	// A flipped byte in the compressed bytes: the detached digest (beside the pack) says the
	// pack changed, whatever gzip makes of it.
	raw, err := os.ReadFile(pack)
	require.NoError(t, err)
	raw[len(raw)/2] ^= 0x40
	corrupt := filepath.Join(filepath.Dir(pack), "c.tar.gz")
	require.NoError(t, os.WriteFile(corrupt, raw, 0o644))
	require.NoError(t, os.WriteFile(corrupt+".sha256", []byte(sum+"  c.tar.gz\n"), 0o644))
	pc, err = VerifyPack(corrupt, "", "")
	require.NoError(t, err)
	require.NotEmpty(t, pc.Problems)
	assert.Contains(t, pc.Problems[0], "the pack changed after it was made")

	// No manifest at all.
	bare := filepath.Join(t.TempDir(), "b.tar.gz")
	packtest.Rewrite(t, pack, bare, func(name string, data []byte) []byte {
		if strings.HasSuffix(name, "/"+SumsFile) {
			return nil
		}
		return data
	}, nil)
	pc, err = VerifyPack(bare, "", "")
	require.NoError(t, err)
	assert.Contains(t, strings.Join(pc.Problems, "\n"), "no SHA256SUMS in the pack")
}

// A pack never carries a path outside its folder into the extraction.
func TestVerifyPackRefusesUnsafeNames(t *testing.T) {
	var buf bytes.Buffer
	gw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gw)
	for _, n := range []string{"a/SHA256SUMS", "a/../../evil.txt", "/abs.txt", "b/other.txt"} {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte("x"))
		require.NoError(t, err)
	}
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "a/link", Linkname: "/etc/passwd", Typeflag: tar.TypeSymlink}))
	require.NoError(t, tw.Close())
	require.NoError(t, gw.Close())
	pack := filepath.Join(t.TempDir(), "evil.tar.gz")
	require.NoError(t, os.WriteFile(pack, buf.Bytes(), 0o644))
	ex := t.TempDir()
	pc, err := VerifyPack(pack, "", ex)
	require.NoError(t, err)
	all := strings.Join(pc.Problems, "\n")
	assert.Contains(t, all, "a/../../evil.txt: unsafe")
	assert.Contains(t, all, "/abs.txt: unsafe")
	assert.Contains(t, all, "b/other.txt: outside the pack's folder a")
	assert.Contains(t, all, "a/link: not a regular file")
	entries, _ := os.ReadDir(ex)
	assert.Empty(t, entries, "nothing unsafe was extracted")
}

// Entries whose names clash on extraction — a file where another entry needs a folder (either
// order), names that differ only in case (one replaces the other on macOS and Windows, so the
// leak scan would never see the first) — are problems naming the entry, and neither is
// extracted; verify never fails on them (it did: "mkdir …: not a directory", issue 42 fuzzing).
func TestVerifyPackNamesClashingEntries(t *testing.T) {
	cases := []struct {
		names []string
		want  string
	}{
		{[]string{"a/run.json", "a/run.json/x"}, "run.json/x: clashes with run.json, a file in the pack, which it needs as a folder"},
		{[]string{"a/scenarios/x.json", "a/scenarios"}, "scenarios: clashes with scenarios/x.json, which needs it as a folder"},
		{[]string{"a/Run.json", "a/run.json"}, "run.json: differs only in case from Run.json"},
	}
	for _, c := range cases {
		t.Run(c.names[1], func(t *testing.T) {
			var buf bytes.Buffer
			gw := gzip.NewWriter(&buf)
			tw := tar.NewWriter(gw)
			for _, n := range append([]string{"a/" + SumsFile}, c.names...) {
				require.NoError(t, tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg}))
				_, err := tw.Write([]byte("x"))
				require.NoError(t, err)
			}
			require.NoError(t, tw.Close())
			require.NoError(t, gw.Close())
			pack := filepath.Join(t.TempDir(), "clash.tar.gz")
			require.NoError(t, os.WriteFile(pack, buf.Bytes(), 0o644))
			pc, err := VerifyPack(pack, "", t.TempDir())
			require.NoError(t, err)
			assert.Contains(t, strings.Join(pc.Problems, "\n"), c.want)
		})
	}
}

// A SHA256SUMS line too long to scan is named like any other bad line (it was "bufio.Scanner:
// token too long", with no line).
func TestParseSumsNamesAnOverlongLine(t *testing.T) {
	_, err := parseSums([]byte(strings.Repeat("0", 64) + "  a\n" + strings.Repeat("x", 2<<20) + "\n"))
	require.EqualError(t, err, `line 2 is not "<sha256>  <file>": bufio.Scanner: token too long`)
}

// Pack refuses a folder being written, and a folder whose own SHA256SUMS no longer matches
// (re-packing would launder the change); an unpacked pack verifies against its manifest.
func TestPackRefusals(t *testing.T) {
	dir := archivetest.Finished(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, results.TempPrefix+"run.json-1"), []byte("{"), 0o644))
	_, err := Pack(dir, filepath.Join(t.TempDir(), "x.tar.gz"))
	require.ErrorContains(t, err, "being written")
	require.NoError(t, os.Remove(filepath.Join(dir, results.TempPrefix+"run.json-1")))

	pack := filepath.Join(t.TempDir(), "x.tar.gz")
	_, err = Pack(dir, pack)
	require.NoError(t, err)
	un := t.TempDir()
	_, err = VerifyPack(pack, "", un)
	require.NoError(t, err)
	// Put the manifest back beside the files: an unpacked pack.
	ex := filepath.Join(t.TempDir(), "unpacked")
	require.NoError(t, os.MkdirAll(ex, 0o755))
	require.NoError(t, os.CopyFS(ex, os.DirFS(un)))
	manifest := extractManifest(t, pack)
	require.NoError(t, os.WriteFile(filepath.Join(ex, SumsFile), manifest, 0o644))
	probs, present, err := CheckManifestDir(ex)
	require.NoError(t, err)
	assert.True(t, present)
	assert.Empty(t, probs)

	require.NoError(t, os.WriteFile(filepath.Join(ex, "README.md"), []byte("# rewritten\n"), 0o644))
	probs, _, err = CheckManifestDir(ex)
	require.NoError(t, err)
	require.Len(t, probs, 1)
	assert.Contains(t, probs[0], "README.md: changed")
	_, err = Pack(ex, filepath.Join(t.TempDir(), "y.tar.gz"))
	require.ErrorContains(t, err, "does not match its own SHA256SUMS")
	var out, errb bytes.Buffer
	assert.Equal(t, 1, VerifyMainWith(ex, VerifyOptions{}, &out, &errb))
	assert.Contains(t, out.String(), "manifest: README.md: changed")
}

func extractManifest(t *testing.T, pack string) []byte {
	t.Helper()
	for _, e := range packtest.Entries(t, pack) {
		if strings.HasSuffix(e.Header.Name, "/"+SumsFile) {
			return e.Data
		}
	}
	require.FailNow(t, "the pack holds no "+SumsFile)
	return nil
}

func TestPackNeverReplacesAPackUnlessAsked(t *testing.T) {
	dir := archivetest.Finished(t)
	dst := filepath.Join(t.TempDir(), "evidence.tar.gz")
	sum, err := Pack(dir, dst)
	require.NoError(t, err)
	_, err = Pack(dir, dst)
	require.ErrorIs(t, err, ErrPackExists)
	// Refused before any work: no temporary file is left beside it.
	entries, err := os.ReadDir(filepath.Dir(dst))
	require.NoError(t, err)
	assert.Len(t, entries, 2, "the pack and its .sha256 only")
	sum2, err := PackReplace(dir, dst)
	require.NoError(t, err)
	assert.Equal(t, sum, sum2)
}
