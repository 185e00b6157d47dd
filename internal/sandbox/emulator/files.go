package emulator

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// fileStore holds uploaded blobs. An upload key (from POST file.json) can be attached once;
// attaching mints a different download key, which is what records carry and what
// GET file.json accepts — as on kintone, where the key read back differs from the upload key.
type fileStore struct {
	mu      sync.Mutex
	uploads map[string]*blob // upload key -> blob, until attached
	// reserved: upload keys attached by a transaction not yet ended. Transactions on
	// different apps hold different locks, so without this two of them could both attach
	// one single-use key.
	reserved map[string]*tx
	stored   map[string]*storedFile
}

type blob struct {
	name, contentType string
	data              []byte
	at                time.Time
}

type storedFile struct {
	blob
	app string // id of the app whose record holds the file (download needs view on it)
}

func newFileStore() *fileStore {
	return &fileStore{uploads: map[string]*blob{}, reserved: map[string]*tx{}, stored: map[string]*storedFile{}}
}

func (fs *fileStore) upload(name, contentType string, data []byte, now time.Time) string {
	key := newUUID()
	fs.mu.Lock()
	fs.uploads[key] = &blob{name: name, contentType: contentType, data: data, at: now}
	fs.mu.Unlock()
	return key
}

// attach reserves an upload key for t (consumed when t commits, freed if it rolls back)
// and mints the download key of the new attachment.
func (fs *fileStore) attach(t *tx, a *app, key string) (fileVal, *apiError) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	b := fs.uploads[key]
	if b == nil || fs.reserved[key] != nil {
		return fileVal{}, errFileNotFound(key)
	}
	fs.reserved[key] = t
	t.used = append(t.used, key)
	dk := newDownloadKey()
	fs.stored[dk] = &storedFile{blob: *b, app: a.id()}
	t.minted = append(t.minted, dk)
	return fileVal{FileKey: dk, Name: b.name, ContentType: b.contentType, Size: strconv.Itoa(len(b.data))}, nil
}

// commit makes t's file changes final: its upload keys are used up, and the attachments of
// records it deleted, or that an update replaced, are gone as on kintone.
func (fs *fileStore) commit(t *tx) { fs.settle(t.used, true, t.dropped) }

// rollback undoes t's file changes: its reservations end and what it minted is dropped.
func (fs *fileStore) rollback(t *tx) { fs.settle(t.used, false, t.minted) }

// settle ends a transaction's reservations of the upload keys it used (consuming the uploads
// too when it commits) and drops the stored files that do not outlive it.
func (fs *fileStore) settle(used []string, consumeUploads bool, gone []string) {
	if len(used) == 0 && len(gone) == 0 {
		return
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, k := range used {
		if consumeUploads {
			delete(fs.uploads, k)
		}
		delete(fs.reserved, k)
	}
	for _, k := range gone {
		delete(fs.stored, k)
	}
}

func (fs *fileStore) get(key string) *storedFile {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.stored[key]
}

// expire drops uploads never attached, as kintone does after three days.
func (fs *fileStore) expire(now time.Time) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for k, b := range fs.uploads {
		if now.Sub(b.at) > 72*time.Hour {
			delete(fs.uploads, k)
		}
	}
}

func newUUID() string {
	b := []byte(randomHex(32))
	b[12] = '4'
	return string(b[0:8]) + "-" + string(b[8:12]) + "-" + string(b[12:16]) + "-" + string(b[16:20]) + "-" + string(b[20:32])
}

// Download keys look like kintone's (timestamp + hex), distinct from upload UUIDs.
func newDownloadKey() string {
	return time.Now().UTC().Format("20060102150405") + randomHex(32)
}

func randomHex(n int) string {
	const hex = "0123456789abcdef"
	r := randomID(n)
	out := make([]byte, n)
	for i := 0; i < n; i++ {
		out[i] = hex[int(r[i])%16]
	}
	return string(out)
}

func (s *Server) uploadFile(c *reqCtx) (any, *apiError) {
	// Upload needs a valid token but no record permission (kintone docs).
	if _, aerr := c.resolveTokens(); aerr != nil {
		return nil, aerr
	}
	if err := c.r.ParseMultipartForm(32 << 20); err != nil {
		return nil, errField("file", msgRequiredPar)
	}
	f, hdr, err := c.r.FormFile("file")
	if err != nil {
		return nil, errField("file", msgRequiredPar)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, &apiError{status: 400, code: "CB_VA01", message: msgInvalidInput}
	}
	ct := hdr.Header.Get("Content-Type")
	if ct == "" {
		ct = "application/octet-stream"
	}
	s.files.expire(s.now())
	return map[string]string{"fileKey": s.files.upload(hdr.Filename, ct, data, s.now())}, nil
}

func (s *Server) handleFileGet(w http.ResponseWriter, c *reqCtx) {
	grants, aerr := c.resolveTokens()
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	key, _ := scalar(c.params["fileKey"])
	if key == "" {
		writeError(w, errField("fileKey", msgRequiredPar))
		return
	}
	f := s.files.get(key)
	if f == nil {
		writeError(w, errFileNotFound(key))
		return
	}
	g, ok := grants[s.byID[f.app]]
	if !ok {
		writeError(w, errBadToken())
		return
	}
	if !g.perms[permView] {
		writeError(w, errNoPermission())
		return
	}
	w.Header().Set("Content-Type", f.contentType)
	w.Header().Set("Content-Disposition", "attachment; filename*=UTF-8''"+url.PathEscape(f.name))
	w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
	w.WriteHeader(http.StatusOK)
	w.Write(f.data) //nolint:errcheck // client went away
}
