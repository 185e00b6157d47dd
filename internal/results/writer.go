package results

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/ksqlflow/flowtest/internal/results/redact"
)

// File modes of everything a Writer writes: files 0644 (set explicitly, whatever the umask
// or the temporary file's 0600), folders 0755.
const (
	fileMode = 0o644
	dirMode  = 0o755
)

// JSONRules says how a Writer redacts a ".json" file (and, unless JSONAsBytes, a ".ndjson"
// file, line by line under the record rules: redact.Redactor.NDJSON); every other file goes
// through redact.Redactor.Bytes.
type JSONRules int

const (
	// JSONRecord: a record's key-aware rules (redact.Redactor.JSON), where a `reason` key
	// holds a request's reason body; the archive's files.
	JSONRecord JSONRules = iota
	// JSONText: keys that are flowtest's own (redact.Redactor.JSONText), where "reason" is a
	// scenario's failure; explore's files.
	JSONText
	// JSONAsBytes: like any other file; files flowtest did not compose (godog's --format
	// output), whose keys it does not know.
	JSONAsBytes
)

// Writer writes files under one folder, each through the run's redactor and whole or not at
// all (TempPrefix, fileMode). The archive, explore's output, before/after evidence and the
// --format files are all written through one, so no file of a run can go around the
// redactor.
type Writer struct {
	dir  string
	red  *redact.Redactor // nil only where nothing can be redacted (the runner's own tests)
	json JSONRules
}

// NewWriter writes into dir (made on the first write) through red.
func NewWriter(dir string, red *redact.Redactor, json JSONRules) *Writer {
	return &Writer{dir: dir, red: red, json: json}
}

// WriteFile writes data, redacted, to name: relative to the Writer's folder, '/'-separated
// and inside it. A JSON document that does not parse is redacted as bytes.
func (w *Writer) WriteFile(name string, data []byte) error {
	clean := path.Clean(strings.ReplaceAll(name, `\`, "/"))
	if clean == "." || strings.HasPrefix(clean, "../") || clean == ".." || path.IsAbs(clean) {
		return fmt.Errorf("write %q: name must stay inside %s", name, w.dir)
	}
	if err := os.MkdirAll(filepath.Join(w.dir, filepath.FromSlash(path.Dir(clean))), dirMode); err != nil {
		return fmt.Errorf("write %s: %w", clean, err)
	}
	return w.write(clean, data)
}

// write redacts and writes a name known to be clean and inside the folder, whose folder exists.
func (w *Writer) write(name string, data []byte) error {
	return writeAtomic(filepath.Join(w.dir, filepath.FromSlash(name)), w.redact(name, data))
}

func (w *Writer) redact(name string, data []byte) []byte {
	if strings.HasSuffix(name, ".ndjson") && w.red != nil && w.json != JSONAsBytes {
		if j, err := w.red.NDJSON(data); err == nil {
			return j
		}
	}
	if strings.HasSuffix(name, ".json") && w.red != nil {
		var j []byte
		var err error
		switch w.json {
		case JSONRecord:
			j, err = w.red.JSON(data)
		case JSONText:
			j, err = w.red.JSONText(data)
		}
		if j != nil && err == nil {
			return j
		}
	}
	return w.red.Bytes(data)
}

// WriteFileAtomic writes data to dst whole or not at all: into a temporary file beside it
// (TempPrefix, which readers skip), synced, then renamed over dst. A command interrupted or
// failing mid-write leaves dst as it was, never half a file.
func WriteFileAtomic(dst string, data []byte) error { return writeAtomic(dst, data) }

// TempPrefix starts the name of a file being written; readers skip such files.
const TempPrefix = ".tmp-"

func writeAtomic(dst string, data []byte) error {
	dir := filepath.Dir(dst)
	f, err := os.CreateTemp(dir, TempPrefix+filepath.Base(dst)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if err := os.Chmod(tmp, fileMode); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", dst, err)
	}
	// Make the rename durable; not supported on every OS (Windows), so best effort.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
