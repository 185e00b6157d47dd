package emulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// Data dir layout (readable by a person inspecting what a run left behind):
//
//	tokens.json            {"<role>": {"<permission set>": "<token>"}}
//	apps/<role>.json       {"id","name","nextId","records":[<record in API read form>]}
//	files.json             {"<download key>": {"name","contentType","app"}}
//	files/<download key>   the attachment bytes
//
// Unattached uploads are not saved (kintone drops them after three days anyway).

type savedApp struct {
	ID      string                `json:"id"`
	Name    string                `json:"name"`
	NextID  int64                 `json:"nextId"`
	Records []map[string]fieldOut `json:"records"`
}

type savedFile struct {
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	App         string `json:"app"`
}

// save writes the whole state under dir. Callers guarantee no request is in flight.
func (s *Server) save(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "apps"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "files"), 0o755); err != nil {
		return err
	}
	toks := map[string]map[string]string{}
	for _, a := range s.apps {
		a.mu.RLock()
		toks[a.schema.Role] = a.tokens
		sa := savedApp{ID: a.id(), Name: a.schema.Name, NextID: a.nextID, Records: make([]map[string]fieldOut, 0, len(a.ids))}
		for _, id := range a.ids {
			sa.Records = append(sa.Records, a.render(a.records[id], nil))
		}
		a.mu.RUnlock()
		if err := writeJSONFile(filepath.Join(dir, "apps", a.schema.Role+".json"), sa); err != nil {
			return err
		}
	}
	if err := writeJSONFile(filepath.Join(dir, "tokens.json"), toks); err != nil {
		return err
	}
	s.files.mu.Lock()
	defer s.files.mu.Unlock()
	meta := map[string]savedFile{}
	for k, f := range s.files.stored {
		meta[k] = savedFile{Name: f.name, ContentType: f.contentType, App: f.app}
		if err := os.WriteFile(filepath.Join(dir, "files", k), f.data, 0o644); err != nil {
			return err
		}
	}
	return writeJSONFile(filepath.Join(dir, "files.json"), meta)
}

func writeJSONFile(path string, v any) error {
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// load reads a data dir saved earlier. It reports false (and changes nothing) when dir holds
// no saved state yet, so the apps get their seed data instead.
func (s *Server) load(dir string) (bool, error) {
	var toks map[string]map[string]string
	data, err := os.ReadFile(filepath.Join(dir, "tokens.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(data, &toks); err != nil {
		return false, fmt.Errorf("tokens.json: %w", err)
	}
	for _, a := range s.apps {
		for set, tok := range toks[a.schema.Role] {
			if _, ok := a.schema.Tokens[set]; ok && tok != "" {
				a.tokens[set] = tok
			}
		}
		path := filepath.Join(dir, "apps", a.schema.Role+".json")
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // an app added to the schemas after the save starts empty
		}
		if err != nil {
			return false, err
		}
		var sa savedApp
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&sa); err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
		for i, rec := range sa.Records {
			r, err := a.restore(rec)
			if err != nil {
				return false, fmt.Errorf("%s: record %d: %w", path, i, err)
			}
			a.put(r)
			a.nextID = max(a.nextID, r.id+1)
		}
		a.nextID = max(a.nextID, sa.NextID)
	}
	var meta map[string]savedFile
	data, err = os.ReadFile(filepath.Join(dir, "files.json"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if err == nil {
		if err := json.Unmarshal(data, &meta); err != nil {
			return false, fmt.Errorf("files.json: %w", err)
		}
	}
	for k, m := range meta {
		b, err := os.ReadFile(filepath.Join(dir, "files", filepath.Base(k)))
		if err != nil {
			return false, fmt.Errorf("file %s: %w", k, err)
		}
		s.files.stored[k] = &storedFile{blob: blob{name: m.Name, contentType: m.ContentType, data: b}, app: m.App}
	}
	return true, nil
}

// restore turns a saved (API read form) record back into a stored record.
func (a *app) restore(rec map[string]fieldOut) (*record, error) {
	str := func(code string) string { s, _ := asString(rec[code].Value); return s }
	id, err := strconv.ParseInt(str(codeID), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("bad $id %q", str(codeID))
	}
	rev, err := strconv.ParseInt(str(codeRevision), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("bad $revision %q", str(codeRevision))
	}
	r := &record{id: id, rev: rev, created: str(codeCreatedAt), updated: str(codeModifiedAt), vals: map[string]any{}}
	for _, f := range a.ordered {
		v := rec[f.Code].Value
		switch f.Type {
		case "CHECK_BOX":
			out := []string{}
			arr, _ := v.([]any)
			for _, e := range arr {
				if s, ok := e.(string); ok {
					out = append(out, s)
				}
			}
			r.vals[f.Code] = out
		case "FILE":
			out := []fileVal{}
			b, _ := json.Marshal(v)
			if v != nil {
				if err := json.Unmarshal(b, &out); err != nil {
					return nil, fmt.Errorf("field %s: %w", f.Code, err)
				}
			}
			r.vals[f.Code] = out
		default:
			s, _ := asString(v)
			r.vals[f.Code] = s
		}
	}
	return r, nil
}
