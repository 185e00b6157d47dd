// Package pack is the handed-over form of an archive and its checks: a reproducible gzip tar
// with a SHA256SUMS manifest and a detached digest (`archive pack`), and `archive verify` of a
// pack or a folder (manifest, integrity, leak scan). It reads finished archives and never
// writes into one, which is why it is apart from the archive writer.
package pack

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/results"
)

// SumsFile is the manifest a pack carries at the top of its folder: one line per other file,
// "<sha256 hex>  <path relative to the folder>", sorted by path (the format of sha256sum, so
// `sha256sum -c SHA256SUMS` checks an unpacked copy too).
const SumsFile = "SHA256SUMS"

// PackExt is the extension of a packed archive; the detached digest is <pack>.sha256.
const PackExt = ".tar.gz"

// maxPackEntry bounds one file read from a pack (an archive file is at most a few MiB; this
// only stops a hostile pack from exhausting memory).
const maxPackEntry = 256 << 20

// Pack seals an archive folder into one .tar.gz at dst: every regular file under dir as
// "<folder name>/<path>", plus "<folder name>/SHA256SUMS" listing the SHA-256 of each. The
// pack is reproducible (sorted entries, zero times and owners, no gzip name or time), so the
// same folder always gives the same bytes. It returns the SHA-256 of the pack (the detached
// digest the caller prints and writes to <dst>.sha256).
//
// Refused: a folder holding a file being written (.tmp-*), anything but regular files and
// folders (a symlink could pull in a file from elsewhere), and a folder with a SHA256SUMS that
// does not match its files (re-packing would launder the change).
//
// An existing dst is never replaced (ErrPackExists): a pack may already have been handed to
// a reviewer with its digest, and a new one under the same name would quietly disown it.
// PackReplace replaces it.
func Pack(dir, dst string) (string, error) { return pack(dir, dst, false) }

// PackReplace is Pack that replaces an existing dst (`archive pack --force`).
func PackReplace(dir, dst string) (string, error) { return pack(dir, dst, true) }

// ErrPackExists is Pack's refusal to replace an existing pack.
var ErrPackExists = errors.New("the pack exists")

func pack(dir, dst string, replace bool) (string, error) {
	if !replace {
		if _, err := os.Lstat(dst); err == nil {
			return "", fmt.Errorf("pack: %s: %w", dst, ErrPackExists)
		}
	}
	files, err := packFiles(dir)
	if err != nil {
		return "", err
	}
	sums, manifest, err := manifestOf(dir, files)
	if err != nil {
		return "", err
	}
	base := filepath.Base(filepath.Clean(dir))
	if base == "." || base == string(filepath.Separator) || base == "" {
		return "", fmt.Errorf("pack: %s has no folder name to pack under", dir)
	}

	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", fmt.Errorf("pack: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), results.TempPrefix+filepath.Base(dst)+"-*")
	if err != nil {
		return "", fmt.Errorf("pack: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename this fails harmlessly
	h := sha256.New()
	if err := writeTarGz(io.MultiWriter(tmp, h), tmp, dir, base, manifest, files, sums); err != nil {
		tmp.Close()
		return "", fmt.Errorf("pack: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("pack: %w", err)
	}
	if err := publish(tmp.Name(), dst, replace); err != nil {
		return "", err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if err := os.WriteFile(dst+".sha256", []byte(sum+"  "+filepath.Base(dst)+"\n"), 0o644); err != nil {
		return sum, fmt.Errorf("pack: write the detached digest: %w", err)
	}
	return sum, nil
}

// manifestOf is the digest of each of files and the SHA256SUMS manifest listing them; a
// folder that already holds a manifest must match it.
func manifestOf(dir string, files []string) (map[string]string, []byte, error) {
	sums := map[string]string{}
	for _, rel := range files {
		sum, err := results.FileSHA256(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, nil, fmt.Errorf("pack: %w", err)
		}
		sums[rel] = sum
	}
	if old, err := os.ReadFile(filepath.Join(dir, SumsFile)); err == nil {
		listed, perr := parseSums(old)
		if perr != nil {
			return nil, nil, fmt.Errorf("pack: %s has a %s that cannot be read (%v); remove it to pack the folder as it is", dir, SumsFile, perr)
		}
		if probs := compareSums(listed, sums); len(probs) > 0 {
			return nil, nil, fmt.Errorf("pack: %s does not match its own %s: %s", dir, SumsFile, strings.Join(probs, "; "))
		}
	}
	var manifest bytes.Buffer
	for _, rel := range files {
		fmt.Fprintf(&manifest, "%s  %s\n", sums[rel], rel)
	}
	return sums, manifest.Bytes(), nil
}

// writeTarGz writes the pack to w (tmp and the pack's digest): the manifest, then each file
// under base, checked against its digest as it is read; the tar, then the gzip stream are
// ended and tmp synced before it is closed.
func writeTarGz(w io.Writer, tmp *os.File, dir, base string, manifest []byte, files []string, sums map[string]string) error {
	gz, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
	tw := tar.NewWriter(gz)
	add := func(name string, data []byte) error {
		hdr := &tar.Header{Name: path.Join(base, name), Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg,
			ModTime: time.Unix(0, 0).UTC(), Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add(SumsFile, manifest); err != nil {
		return err
	}
	for _, rel := range files {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err == nil {
			// The file must still be what the manifest says.
			if s := sha256.Sum256(data); hex.EncodeToString(s[:]) != sums[rel] {
				err = fmt.Errorf("%s changed while it was being packed", rel)
			}
		}
		if err == nil {
			err = add(rel, data)
		}
		if err != nil {
			return err
		}
	}
	// The tar, then the gzip stream are ended and the file is on disk before it is closed.
	for _, finish := range []func() error{tw.Close, gz.Close, tmp.Sync} {
		if err := finish(); err != nil {
			return err
		}
	}
	return nil
}

// publish puts the written pack tmp at dst: replacing it, or only where no file is.
func publish(tmp, dst string, replace bool) error {
	if err := os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("pack: %w", err)
	}
	if replace {
		if err := os.Rename(tmp, dst); err != nil {
			return fmt.Errorf("pack: %w", err)
		}
	} else if err := os.Link(tmp, dst); err != nil {
		// A link, unlike a rename, fails when dst appeared meanwhile (another pack run).
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("pack: %s: %w", dst, ErrPackExists)
		}
		// A file system without hard links: check, then rename (a narrow race, no worse).
		if _, serr := os.Lstat(dst); serr == nil {
			return fmt.Errorf("pack: %s: %w", dst, ErrPackExists)
		}
		if err := os.Rename(tmp, dst); err != nil {
			return fmt.Errorf("pack: %w", err)
		}
	}
	return nil
}

// packFiles lists the regular files under dir ('/'-separated, sorted), without a top-level
// SHA256SUMS. The members are results.Members', the listing `archive verify` judges a folder
// by: a link (symbolic or hard) or a special file is refused here too, so a pack seals only
// what verify would pass.
func packFiles(dir string) ([]string, error) {
	members, probs, err := results.Members(dir)
	if err != nil {
		return nil, fmt.Errorf("pack: %w", err)
	}
	if len(probs) > 0 {
		p := probs[0]
		return nil, fmt.Errorf("pack %s: %s is not a regular file: %s (a pack holds only the archive's own files)", dir, p.File, p.What)
	}
	var files []string
	for _, rel := range members {
		for _, name := range strings.Split(rel, "/") {
			if strings.HasPrefix(name, results.TempPrefix) {
				return nil, fmt.Errorf("pack %s: %s is a file being written (%s*): the run is not finished", dir, rel, results.TempPrefix)
			}
		}
		if rel != SumsFile {
			files = append(files, rel)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("pack: %s holds no file", dir)
	}
	return files, nil
}

var sumsLine = regexp.MustCompile(`^([0-9a-f]{64}) [ *](.+)$`)

// parseSums reads a SHA256SUMS manifest.
func parseSums(data []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" {
			continue
		}
		m := sumsLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("line %d is not \"<sha256>  <file>\"", n)
		}
		if _, dup := out[m[2]]; dup {
			return nil, fmt.Errorf("line %d lists %s a second time", n, m[2])
		}
		out[m[2]] = m[1]
	}
	if err := sc.Err(); err != nil {
		// A line over the scanner's 1 MiB: name it like any other bad line.
		return nil, fmt.Errorf("line %d is not \"<sha256>  <file>\": %v", n+1, err)
	}
	return out, nil
}

// compareSums lists every difference between a manifest and the files' real digests, one
// message per file, sorted by file.
func compareSums(listed, actual map[string]string) []string {
	var names []string
	seen := map[string]bool{}
	for n := range listed {
		names, seen[n] = append(names, n), true
	}
	for n := range actual {
		if !seen[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var probs []string
	for _, n := range names {
		want, inList := listed[n]
		got, present := actual[n]
		switch {
		case !present:
			probs = append(probs, fmt.Sprintf("%s: listed in %s but missing", n, SumsFile))
		case !inList:
			probs = append(probs, fmt.Sprintf("%s: not listed in %s (added after packing)", n, SumsFile))
		case want != got:
			probs = append(probs, fmt.Sprintf("%s: changed: its sha256 is %s, %s says %s", n, got, SumsFile, want))
		}
	}
	return probs
}

// CheckManifestDir checks a folder against its SHA256SUMS (an unpacked pack). present is
// false when the folder has none.
func CheckManifestDir(dir string) (problems []string, present bool, err error) {
	data, err := os.ReadFile(filepath.Join(dir, SumsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	listed, err := parseSums(data)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", SumsFile, err)}, true, nil
	}
	files, err := packFiles(dir)
	if err != nil {
		return nil, true, err
	}
	actual := map[string]string{}
	for _, rel := range files {
		sum, err := results.FileSHA256(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, true, err
		}
		actual[rel] = sum
	}
	return compareSums(listed, actual), true, nil
}

// extracted are the names VerifyPack has extracted so far, to refuse an entry that cannot be
// extracted beside them: a file where a folder is needed (or the reverse) made the extraction
// fail without naming the entry, and two names that differ only in case are one file on macOS
// and Windows, so the leak scan would see only the second.
type extracted struct {
	files   map[string]bool
	folders map[string]string // folder -> the first file extracted under it
	folded  map[string]string // lower-cased file or folder name -> the name as extracted
}

// clash says how rel clashes with a name extracted before it ("" if it does not), or else
// records it.
func (x *extracted) clash(rel string) string {
	if f, ok := x.folders[rel]; ok {
		return fmt.Sprintf("clashes with %s, which needs it as a folder", f)
	}
	var parents []string
	for i, c := range rel {
		if c == '/' {
			parents = append(parents, rel[:i])
		}
	}
	for _, d := range parents {
		if x.files[d] {
			return fmt.Sprintf("clashes with %s, a file in the pack, which it needs as a folder", d)
		}
	}
	for _, n := range append(parents, rel) {
		if other, ok := x.folded[strings.ToLower(n)]; ok && other != n {
			return fmt.Sprintf("differs only in case from %s (on a case-insensitive file system one would replace the other)", other)
		}
	}
	x.files[rel] = true
	for _, n := range append(parents, rel) {
		x.folded[strings.ToLower(n)] = n
	}
	for _, d := range parents {
		if _, ok := x.folders[d]; !ok {
			x.folders[d] = rel
		}
	}
	return ""
}

// PackCheck is what VerifyPack found.
type PackCheck struct {
	SHA256   string   // of the pack file
	Detached string   // the expected digest (given, or read from <pack>.sha256); "" if none
	Folder   string   // the folder name inside the pack
	Files    int      // files besides the manifest
	Problems []string // manifest and integrity problems, each naming its file
}

// VerifyPack checks a pack: its bytes against the detached digest (expect, else the
// <pack>.sha256 file beside it, if any), that it is a well-formed gzip tar of one folder
// holding only regular files with safe names, and every file against the SHA256SUMS inside.
// The files are extracted into extractTo (an empty folder) for the secret scan. A problem
// found while reading an entry names that entry.
func VerifyPack(pack, expect, extractTo string) (*PackCheck, error) {
	f, err := os.Open(pack)
	if err != nil {
		return nil, fmt.Errorf("verify pack: %w", err)
	}
	defer f.Close()
	pc := &PackCheck{}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("verify pack: %w", err)
	}
	pc.SHA256 = hex.EncodeToString(h.Sum(nil))
	pc.Detached = detachedDigest(pack, expect)
	if pc.Detached != "" && pc.Detached != pc.SHA256 {
		pc.Problems = append(pc.Problems, fmt.Sprintf("%s: the pack's sha256 is %s, the detached digest says %s: the pack changed after it was made", filepath.Base(pack), pc.SHA256, pc.Detached))
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("verify pack: %w", err)
	}
	gz, err := gzip.NewReader(f)
	if err != nil {
		pc.Problems = append(pc.Problems, fmt.Sprintf("%s: not a readable gzip stream: %v", filepath.Base(pack), err))
		return pc, nil
	}
	actual, manifest, err := pc.readEntries(tar.NewReader(gz), filepath.Base(pack), extractTo)
	if err != nil {
		return nil, err
	}
	pc.Files = len(actual)
	if manifest == nil {
		pc.Problems = append(pc.Problems, fmt.Sprintf("%s: no %s in the pack: nothing says what it should hold", filepath.Base(pack), SumsFile))
		return pc, nil
	}
	listed, err := parseSums(manifest)
	if err != nil {
		pc.Problems = append(pc.Problems, fmt.Sprintf("%s: %v", SumsFile, err))
		return pc, nil
	}
	pc.Problems = append(pc.Problems, compareSums(listed, actual)...)
	return pc, nil
}

// detachedDigest is the pack's expected sha256: expect, else the first field of its
// detached .sha256 file ("" when neither says).
func detachedDigest(pack, expect string) string {
	if d := strings.ToLower(strings.TrimSpace(expect)); d != "" {
		return d
	}
	if data, err := os.ReadFile(pack + ".sha256"); err == nil {
		if fields := strings.Fields(string(data)); len(fields) > 0 {
			return strings.ToLower(fields[0])
		}
	}
	return ""
}

// readEntries reads the pack's entries: the digest of each file (extracted to extractTo when
// given) and the manifest, naming in pc every entry a pack must not hold. The error is a
// failure to extract, not a fault of the pack.
func (pc *PackCheck) readEntries(tr *tar.Reader, packName, extractTo string) (actual map[string]string, manifest []byte, err error) {
	actual = map[string]string{}
	names := extracted{files: map[string]bool{}, folders: map[string]string{}, folded: map[string]string{}}
	current := "(start of the pack)"
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			pc.Problems = append(pc.Problems, fmt.Sprintf("%s: the pack is corrupt after %s: %v", packName, current, err))
			break
		}
		current = hdr.Name
		rel, ok := pc.entryPath(hdr)
		if !ok {
			continue
		}
		if _, dup := actual[rel]; dup || (rel == SumsFile && manifest != nil) {
			pc.Problems = append(pc.Problems, fmt.Sprintf("%s: in the pack twice", rel))
			continue
		}
		data, err := io.ReadAll(io.LimitReader(tr, maxPackEntry+1))
		if err == nil && len(data) > maxPackEntry {
			err = fmt.Errorf("larger than %d bytes", maxPackEntry)
		}
		if err != nil {
			pc.Problems = append(pc.Problems, fmt.Sprintf("%s: cannot be read from the pack: %v", rel, err))
			break
		}
		if rel == SumsFile {
			manifest = data
			continue
		}
		if problem := names.clash(rel); problem != "" {
			pc.Problems = append(pc.Problems, rel+": "+problem)
			continue
		}
		s := sha256.Sum256(data)
		actual[rel] = hex.EncodeToString(s[:])
		if extractTo != "" {
			dst := filepath.Join(extractTo, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return nil, nil, fmt.Errorf("verify pack: %w", err)
			}
			if err := os.WriteFile(dst, data, 0o644); err != nil {
				return nil, nil, fmt.Errorf("verify pack: %w", err)
			}
		}
	}
	return actual, manifest, nil
}

// entryPath is the entry's path inside the pack's one folder; false (the problem named in
// pc) for a folder, a non-regular file, an unsafe name or one outside the folder.
func (pc *PackCheck) entryPath(hdr *tar.Header) (string, bool) {
	name := hdr.Name
	folder, rel, ok := strings.Cut(path.Clean(name), "/")
	switch {
	case hdr.Typeflag == tar.TypeDir:
		return "", false
	case hdr.Typeflag != tar.TypeReg:
		pc.Problems = append(pc.Problems, fmt.Sprintf("%s: not a regular file (tar type %q)", name, hdr.Typeflag))
		return "", false
	case !ok || path.IsAbs(name) || strings.HasPrefix(path.Clean(name), "../") || strings.Contains(name, `\`) || rel == "" || !fs.ValidPath(path.Clean(name)):
		pc.Problems = append(pc.Problems, fmt.Sprintf("%s: unsafe or unexpected name (a pack holds one folder)", name))
		return "", false
	}
	if pc.Folder == "" {
		pc.Folder = folder
	} else if folder != pc.Folder {
		pc.Problems = append(pc.Problems, fmt.Sprintf("%s: outside the pack's folder %s", name, pc.Folder))
		return "", false
	}
	return rel, true
}

// IsPack reports whether path names a packed archive (by its extension).
func IsPack(p string) bool {
	return strings.HasSuffix(p, PackExt) || strings.HasSuffix(p, ".tgz")
}
