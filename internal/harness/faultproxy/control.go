package faultproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// controlSpec is a parsed control file.
type controlSpec struct {
	mode     Mode
	barriers []*compiled
	faults   []*compiledFault
	// problems name what the file got wrong; they never stop the rest from applying.
	problems []string
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// parseControl follows the original hook: plain text mode, or JSON {mode, barriers,
// faults}; unparsable JSON or an unknown mode mean pass; invalid barriers and faults
// are dropped (and named in problems).
func parseControl(data []byte) controlSpec {
	t := bytes.TrimSpace(bytes.TrimPrefix(data, utf8BOM))
	spec := controlSpec{mode: ModePass}
	if len(t) == 0 || t[0] != '{' {
		m, err := ParseMode(string(t))
		if err != nil {
			spec.problems = append(spec.problems, err.Error()+"; passing everything")
			return spec
		}
		spec.mode = m
		return spec
	}
	var raw struct {
		Mode     string            `json:"mode"`
		Barriers []json.RawMessage `json:"barriers"`
		Faults   []json.RawMessage `json:"faults"`
	}
	if err := json.Unmarshal(t, &raw); err != nil {
		spec.problems = append(spec.problems, fmt.Sprintf("control file is not valid JSON (%v); passing everything", err))
		return spec
	}
	if raw.Mode != "" {
		if m, err := ParseMode(raw.Mode); err == nil {
			spec.mode = m
		} else {
			spec.problems = append(spec.problems, err.Error()+"; passing everything")
		}
	}
	spec.barriers = parseUnique(&spec.problems, "barriers", "barrier", raw.Barriers, parseFileBarrier, func(c *compiled) string { return c.b.ID })
	spec.faults = parseUnique(&spec.problems, "faults", "fault", raw.Faults, parseFileFault, func(c *compiledFault) string { return c.f.ID })
	return spec
}

// ValidateControl checks a control file's content and names every problem in it (an
// unknown mode, a barrier or fault that would be dropped), so a tool can refuse a file
// before a proxy reads it.
func ValidateControl(data []byte) error {
	var errs []error
	for _, p := range parseControl(data).problems {
		errs = append(errs, errors.New(p))
	}
	return errors.Join(errs...)
}

// parseUnique parses each entry of one list of the control file (barriers, faults) and keeps
// the ones that parse and whose id is not repeated; a problem line names each other one.
func parseUnique[C any](problems *[]string, list, kind string, raw []json.RawMessage, parse func(json.RawMessage) (C, error), id func(C) string) []C {
	var out []C
	seen := map[string]bool{}
	for i, r := range raw {
		c, err := parse(r)
		switch {
		case err != nil:
			*problems = append(*problems, fmt.Sprintf("%s[%d]: %v", list, i, err))
		case seen[id(c)]:
			*problems = append(*problems, fmt.Sprintf("%s[%d]: %s %s: id repeated", list, i, kind, id(c)))
		default:
			seen[id(c)] = true
			out = append(out, c)
		}
	}
	return out
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
				Key   json.RawMessage `json:"key"`
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
		if len(fb.Match.Body.Key) > 0 && string(fb.Match.Body.Key) != "null" {
			if bm.Key, ok = scalar(fb.Match.Body.Key); !ok {
				return nil, errors.New("match.body.key is neither string nor number")
			}
		}
		b.Match.Body = bm
	}
	return compile(b)
}

// jsonScalar reads an optional JSON string or number (operators write ids both ways).
func jsonScalar(raw json.RawMessage, name string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf("%s is neither string nor number", name)
}

// parseFileFault reads a fault object strictly: an unknown key (a misspelt matcher) is
// refused rather than silently matching more than the operator meant.
func parseFileFault(raw json.RawMessage) (*compiledFault, error) {
	var ff struct {
		ID     string          `json:"id"`
		Action Action          `json:"action"`
		Times  json.RawMessage `json:"times"`
		Match  *struct {
			Method    string          `json:"method"`
			Path      string          `json:"path"`
			App       json.RawMessage `json:"app"`
			RecordID  json.RawMessage `json:"record_id"`
			RecordKey json.RawMessage `json:"record_key"`
			Field     string          `json:"field"`
			Write     bool            `json:"write"`
			Nth       int             `json:"nth"`
		} `json:"match"`
		Status  int                 `json:"status"`
		Code    string              `json:"code"`
		Message string              `json:"message"`
		Errors  map[string][]string `json:"errors"`
		Body    string              `json:"body"`
		Delay   string              `json:"delay"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ff); err != nil {
		var id struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(raw, &id) == nil && id.ID != "" {
			return nil, fmt.Errorf("fault %s: %w", id.ID, err)
		}
		return nil, err
	}
	f := Fault{ID: ff.ID, Action: ff.Action, Status: ff.Status, Code: ff.Code, Message: ff.Message, Errors: ff.Errors, Body: ff.Body}
	fail := func(err error) (*compiledFault, error) { return nil, fmt.Errorf("fault %s: %w", ff.ID, err) }
	if ff.Match != nil {
		m := ff.Match
		f.Match = FaultMatch{Method: m.Method, Path: m.Path, Field: m.Field, Write: m.Write, Nth: m.Nth}
		var err error
		if f.Match.App, err = jsonScalar(m.App, "match.app"); err != nil {
			return fail(err)
		}
		if f.Match.RecordID, err = jsonScalar(m.RecordID, "match.record_id"); err != nil {
			return fail(err)
		}
		if f.Match.RecordKey, err = jsonScalar(m.RecordKey, "match.record_key"); err != nil {
			return fail(err)
		}
	}
	switch t := string(bytes.TrimSpace(ff.Times)); t {
	case "", "null", `"once"`:
	case `"always"`:
		f.Times = Always
	default:
		n, err := strconv.Atoi(t)
		if err != nil || n < 1 {
			return fail(fmt.Errorf("times %s (want a positive number, \"once\" or \"always\")", t))
		}
		f.Times = n
	}
	if ff.Delay != "" {
		d, err := time.ParseDuration(ff.Delay)
		if err != nil {
			return fail(fmt.Errorf("delay %q is not a duration like \"1.5s\"", ff.Delay))
		}
		f.Delay = d
	}
	return compileFault(f)
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
