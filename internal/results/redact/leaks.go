package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Leak is one place where an archive file still holds something redaction should have
// removed. It never carries the secret itself.
type Leak struct {
	File   string // relative to the archive, '/'-separated
	Offset int64  // byte offset in the file
	Kind   string // e.g. "secret KINTONE_TOKEN (base64)", "raw app id (field app)"
}

func (l Leak) String() string { return fmt.Sprintf("%s:%d: %s", l.File, l.Offset, l.Kind) }

// Verify scans every file under dir (temporary files included) for the secret values
// (name -> value; empty values and values NotSecret rejects ignored) in every encoding
// redaction handles, also split across a line break, for values spelled with \u escapes
// inside JSON strings, for raw app ids in the positions redaction rewrites (see appHits),
// and, in .json files, for values under credential keys that are not placeholders.
// Placeholders "[REDACTED:…]" themselves are never reported.
func Verify(dir string, secrets map[string]string, appIDs []string) ([]Leak, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("verify archive: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("verify archive: %s is not a directory", dir)
	}
	sc := newLeakScanner(secrets, appIDs)
	var leaks []Leak
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("verify archive: %w", err)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("verify archive: %w", err)
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		leaks = append(leaks, sc.scan(rel, data)...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sortLeaks(leaks)
	return leaks, nil
}

// VerifyFiles is Verify for files flowtest wrote outside an archive (the --format files, an
// evidence table): each path is scanned as Verify scans an archive's file, and a leak names
// the path as given. A path that cannot be read is an error.
func VerifyFiles(paths []string, secrets map[string]string, appIDs []string) ([]Leak, error) {
	sc := newLeakScanner(secrets, appIDs)
	var leaks []Leak
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("verify file: %w", err)
		}
		leaks = append(leaks, sc.scan(filepath.ToSlash(p), data)...)
	}
	sortLeaks(leaks)
	return leaks, nil
}

func sortLeaks(leaks []Leak) {
	sort.SliceStable(leaks, func(i, j int) bool {
		if leaks[i].File != leaks[j].File {
			return leaks[i].File < leaks[j].File
		}
		return leaks[i].Offset < leaks[j].Offset
	})
}

// leakScanner holds what a leak scan looks for.
type leakScanner struct {
	m      *matcher
	apps   map[string]string
	idLens [32]bool
}

func newLeakScanner(secrets map[string]string, appIDs []string) *leakScanner {
	clean, _ := keepSecrets(secrets) // the redactor's rule: what it keeps is not a leak
	sc := &leakScanner{m: newMatcher(secretPatterns(clean)), apps: map[string]string{}}
	for _, id := range appIDs {
		id = strings.TrimSpace(id)
		if allDigits(id) && len(id) < len(sc.idLens) {
			sc.apps[id] = "?"
			sc.idLens[len(id)] = true
		}
	}
	return sc
}

func (sc *leakScanner) scan(file string, data []byte) []Leak {
	return scanForLeaks(file, data, sc.m, sc.apps, &sc.idLens)
}

func scanForLeaks(file string, data []byte, m *matcher, apps map[string]string, idLens *[32]bool) []Leak {
	var leaks []Leak
	spans := m.scan(data)
	for _, sp := range spans {
		leaks = append(leaks, Leak{File: file, Offset: int64(sp.start), Kind: sp.p.kind})
	}
	if !m.empty() && bytes.Contains(data, []byte(`\u`)) {
		forEachEscapedLiteral(data, func(start, end int, decoded string) {
			for _, sp := range spans {
				if sp.start < end && sp.end > start {
					return // already reported in its raw form
				}
			}
			if ds := m.scan([]byte(decoded)); len(ds) > 0 {
				leaks = append(leaks, Leak{File: file, Offset: int64(start), Kind: ds[0].p.kind + " spelled with \\u escapes"})
			}
		})
	}
	if len(apps) > 0 {
		for _, h := range appHits(data, apps, idLens) {
			leaks = append(leaks, Leak{File: file, Offset: int64(h.start), Kind: "raw app id (" + h.form + ")"})
		}
	}
	if strings.HasSuffix(file, ".json") {
		leaks = append(leaks, sensitiveValues(file, data)...)
	}
	return leaks
}

// sensitiveValues reports strings under credential keys that are not placeholders. A file
// that does not parse as JSON is skipped here (the byte scans above still covered it).
func sensitiveValues(file string, data []byte) []Leak {
	type frame struct {
		obj       bool
		expectKey bool
		key       string
		sensitive string
	}
	var leaks []Leak
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*frame
	for {
		off := dec.InputOffset()
		for off < int64(len(data)) && strings.IndexByte(" \t\r\n:,", data[off]) >= 0 {
			off++ // point at the value, not the separator before it
		}
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) || err != nil {
			return leaks
		}
		var f *frame
		if len(stack) > 0 {
			f = stack[len(stack)-1]
		}
		if f != nil && f.obj && f.expectKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			f.key, _ = tok.(string)
			f.expectKey = false
			continue
		}
		sensitive := ""
		if f != nil {
			sensitive = f.sensitive
			if sensitive == "" && f.obj && isSensitiveKey(f.key) {
				sensitive = f.key
			}
			if f.obj {
				f.expectKey = true
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				stack = append(stack, &frame{obj: t == '{', expectKey: t == '{', sensitive: sensitive})
			default:
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].obj {
					stack[len(stack)-1].expectKey = true
				}
			}
		case string:
			if sensitive != "" && t != "" && !strings.HasPrefix(t, "[REDACTED:") {
				leaks = append(leaks, Leak{File: file, Offset: off, Kind: "unredacted value under credential key " + sensitive})
			}
		case json.Number:
			if sensitive != "" {
				leaks = append(leaks, Leak{File: file, Offset: off, Kind: "unredacted value under credential key " + sensitive})
			}
		}
	}
}

// VerifyFiles scans files written outside an archive (VerifyFiles) for everything r redacts
// now: its secrets, those added at run time included, and its app ids.
func (r *Redactor) VerifyFiles(paths []string) ([]Leak, error) {
	r.mu.Lock()
	secrets := maps.Clone(r.secrets)
	r.mu.Unlock()
	return VerifyFiles(paths, secrets, slices.Collect(maps.Keys(r.apps)))
}
