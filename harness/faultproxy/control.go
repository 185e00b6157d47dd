package faultproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
)

// controlSpec is a parsed control file.
type controlSpec struct {
	mode     Mode
	barriers []*compiled
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// parseControl follows the original hook: plain text mode, or JSON {mode, barriers};
// unparsable JSON or an unknown mode mean pass; invalid barriers are dropped.
func parseControl(data []byte) controlSpec {
	t := bytes.TrimSpace(bytes.TrimPrefix(data, utf8BOM))
	if len(t) > 0 && t[0] == '{' {
		var raw struct {
			Mode     string            `json:"mode"`
			Barriers []json.RawMessage `json:"barriers"`
		}
		if json.Unmarshal(t, &raw) != nil {
			return controlSpec{mode: ModePass}
		}
		spec := controlSpec{mode: ModePass}
		if m, err := ParseMode(raw.Mode); err == nil {
			spec.mode = m
		}
		seen := map[string]bool{}
		for _, rb := range raw.Barriers {
			c, err := parseFileBarrier(rb)
			if err != nil || seen[c.b.ID] {
				continue
			}
			seen[c.b.ID] = true
			spec.barriers = append(spec.barriers, c)
		}
		return spec
	}
	if m, err := ParseMode(string(t)); err == nil {
		return controlSpec{mode: m}
	}
	return controlSpec{mode: ModePass}
}

// parseFileBarrier accepts app and id as JSON strings or numbers, since operators
// write app ids both ways.
func parseFileBarrier(raw json.RawMessage) (*compiled, error) {
	var fb struct {
		ID      string `json:"id"`
		Phase   Phase  `json:"phase"`
		Release string `json:"release"`
		Match   struct {
			Path   string `json:"path"`
			Method string `json:"method"`
			Body   *struct {
				App   json.RawMessage `json:"app"`
				ID    json.RawMessage `json:"id"`
				Field string          `json:"field"`
			} `json:"body"`
		} `json:"match"`
	}
	if err := json.Unmarshal(raw, &fb); err != nil {
		return nil, err
	}
	b := Barrier{ID: fb.ID, Phase: fb.Phase, Release: fb.Release,
		Match: Match{Path: fb.Match.Path, Method: fb.Match.Method}}
	if fb.Match.Body != nil {
		bm := &BodyMatch{Field: fb.Match.Body.Field}
		var ok bool
		if len(fb.Match.Body.App) > 0 && string(fb.Match.Body.App) != "null" {
			if bm.App, ok = scalar(fb.Match.Body.App); !ok {
				return nil, errors.New("match.body.app is neither string nor number")
			}
		}
		if len(fb.Match.Body.ID) > 0 && string(fb.Match.Body.ID) != "null" {
			if bm.ID, ok = scalar(fb.Match.Body.ID); !ok {
				return nil, errors.New("match.body.id is neither string nor number")
			}
		}
		b.Match.Body = bm
	}
	return compile(b)
}

// controlWatcher remembers the last content seen so only changes apply.
type controlWatcher struct {
	path    string
	exists  bool
	content []byte
}

// poll returns the new spec when the file changed since the last poll.
func (w *controlWatcher) poll() (controlSpec, bool) {
	data, err := os.ReadFile(w.path)
	exists := err == nil
	if exists == w.exists && bytes.Equal(data, w.content) {
		return controlSpec{}, false
	}
	w.exists, w.content = exists, data
	if !exists {
		return controlSpec{mode: ModePass}, true
	}
	return parseControl(data), true
}
