package emulator

import (
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// record is one stored kintone record. Records are replaced, never mutated in place, so a
// transaction can undo a write by putting the previous pointer back.
type record struct {
	id, rev int64
	created string // datetimeLayout, minute precision like kintone's CREATED_TIME
	updated string
	vals    map[string]any
	modSeq  uint64 // app modSeq at the last write (race detection for GAIA_DA02)
}

// app is one emulated kintone app with its records, unique indexes and tokens.
type app struct {
	schema  *AppSchema
	fields  map[string]*FieldDef // user fields by code
	ordered []*FieldDef          // user fields in schema order
	latency time.Duration

	mu      sync.RWMutex // writers (and transactions) hold Lock; readers RLock
	records map[int64]*record
	ids     []int64 // ascending
	nextID  int64
	unique  map[string]map[string]int64 // field code -> value -> record id
	modSeq  atomic.Uint64               // bumped by every record write
	tokens  map[string]string           // permission set -> token
}

func newApp(s *AppSchema) *app {
	a := &app{schema: s, fields: map[string]*FieldDef{}, records: map[int64]*record{},
		nextID: 1, unique: map[string]map[string]int64{}, tokens: map[string]string{}}
	for i := range s.Fields {
		f := &s.Fields[i]
		a.fields[f.Code] = f
		a.ordered = append(a.ordered, f)
		if f.Unique {
			a.unique[f.Code] = map[string]int64{}
		}
	}
	return a
}

func (a *app) id() string { return a.schema.ID }

// put stores r (replacing any record with the same id) and keeps ids and unique indexes in step.
func (a *app) put(r *record) {
	old := a.records[r.id]
	if old != nil {
		a.unindex(old)
	} else {
		i := sort.Search(len(a.ids), func(i int) bool { return a.ids[i] >= r.id })
		if i == len(a.ids) {
			a.ids = append(a.ids, r.id)
		} else if a.ids[i] != r.id {
			a.ids = append(a.ids, 0)
			copy(a.ids[i+1:], a.ids[i:])
			a.ids[i] = r.id
		}
	}
	a.records[r.id] = r
	for code, idx := range a.unique {
		if s, _ := r.vals[code].(string); s != "" {
			idx[s] = r.id
		}
	}
}

func (a *app) remove(id int64) {
	old := a.records[id]
	if old == nil {
		return
	}
	a.unindex(old)
	delete(a.records, id)
	i := sort.Search(len(a.ids), func(i int) bool { return a.ids[i] >= id })
	if i < len(a.ids) && a.ids[i] == id {
		a.ids = append(a.ids[:i], a.ids[i+1:]...)
	}
}

func (a *app) unindex(r *record) {
	for code, idx := range a.unique {
		if s, _ := r.vals[code].(string); s != "" && idx[s] == r.id {
			delete(idx, s)
		}
	}
}

// fieldInput is one record's write payload: code -> {"value": …} object.
type fieldInput map[string]any

func (in fieldInput) value(code string) (any, bool, *apiError) {
	raw, ok := in[code]
	if !ok {
		return nil, false, nil
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, false, errJSON()
	}
	v, ok := obj["value"]
	return v, ok, nil
}

// buildValues merges a write payload into base (nil for an add) and validates the result.
// prefix is the error key prefix: "record" or "records[i]". id is the target record (0 for
// an add) so unique checks ignore the record itself.
func (t *tx) buildValues(a *app, base map[string]any, in fieldInput, prefix string, id int64) (map[string]any, *apiError) {
	vals := make(map[string]any, len(a.ordered))
	for k, v := range base {
		vals[k] = v
	}
	// kintone refuses a value for the record id or RECORD_NUMBER (a record read back and
	// sent unchanged carries both), while other unknown codes are ignored below.
	for _, code := range []string{codeID, codeRecordNo} {
		if _, sent := in[code]; sent {
			return nil, errRecordIDField()
		}
	}
	errs := map[string][]string{}
	for _, f := range a.ordered {
		key := prefix + "." + f.Code
		v, present, aerr := in.value(f.Code)
		if aerr != nil {
			return nil, aerr
		}
		if !present {
			if base == nil {
				vals[f.Code] = defaultFor(f)
			}
			continue
		}
		if f.Type == "FILE" {
			fv, aerr := t.attachFiles(a, base, f, v, key)
			if aerr != nil {
				return nil, aerr
			}
			vals[f.Code] = fv
			continue
		}
		nv, aerr := normalizeValue(f, v, key)
		if aerr != nil {
			if aerr.code != "CB_VA01" {
				return nil, aerr
			}
			for k, m := range aerr.errors {
				errs[k] = append(errs[k], m...)
			}
			continue
		}
		vals[f.Code] = nv
	}
	// Unknown field codes (and the other system fields: $revision, 作成者, 作成日時, …) are
	// ignored, as kintone does for unknown codes; token requests lack the app-management
	// right to set the system fields, and kintone's answer to trying is not documented.
	for _, f := range a.ordered {
		key := prefix + "." + f.Code + ".value"
		if len(errs[key]) > 0 {
			continue
		}
		if f.Required && isEmpty(vals[f.Code]) {
			errs[key] = append(errs[key], msgRequired)
			continue
		}
		if idx, ok := a.unique[f.Code]; ok {
			if s, _ := vals[f.Code].(string); s != "" {
				// defect.KintoneAcceptsDuplicateUnique plants a unique index that is kept but never enforced.
				if other, taken := idx[s]; taken && other != id && !defect.KintoneAcceptsDuplicateUnique {
					errs[key] = append(errs[key], msgDuplicate)
				}
			}
		}
	}
	if len(errs) > 0 {
		return nil, errValidation(errs)
	}
	return vals, nil
}

// attachFiles turns a FILE write value into stored attachments: an upload key is consumed
// (single use) and gets a new download key; a download key already on this record keeps
// that attachment, as kintone lets clients send back what they read.
func (t *tx) attachFiles(a *app, base map[string]any, f *FieldDef, v any, key string) ([]fileVal, *apiError) {
	if v == nil {
		return []fileVal{}, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, errJSON()
	}
	var existing []fileVal
	if base != nil {
		existing, _ = base[f.Code].([]fileVal)
	}
	out := make([]fileVal, 0, len(arr))
	for _, e := range arr {
		obj, ok := e.(map[string]any)
		if !ok {
			return nil, errJSON()
		}
		k, _ := obj["fileKey"].(string)
		if k == "" {
			return nil, errField(key+".value", msgRequired)
		}
		kept := false
		for _, ex := range existing {
			if ex.FileKey == k {
				out = append(out, ex)
				kept = true
				break
			}
		}
		if kept {
			continue
		}
		fv, aerr := t.s.files.attach(t, a, k)
		if aerr != nil {
			return nil, aerr
		}
		out = append(out, fv)
	}
	return out, nil
}

// add inserts one record; prefix as in buildValues.
func (t *tx) add(a *app, in fieldInput, prefix string) (*record, *apiError) {
	vals, aerr := t.buildValues(a, nil, in, prefix, 0)
	if aerr != nil {
		return nil, aerr
	}
	// The unique checks above and the insert below are one step: the app's write lock is
	// held throughout, so a concurrent add of the same value waits and then gets CB_VA01.
	// defect.KintoneUniqueCheckNotAtomic plants an add that gives the lock up in
	// between (validated, then re-locked for the insert without checking again).
	if defect.KintoneUniqueCheckNotAtomic {
		a.mu.Unlock()
	}
	if h := t.s.hooks.uniqueChecked; h != nil {
		h(a.id())
	}
	if defect.KintoneUniqueCheckNotAtomic {
		a.mu.Lock()
	}
	id := a.nextID
	a.nextID++
	now := t.now.UTC().Truncate(time.Minute).Format(datetimeLayout)
	r := &record{id: id, rev: 1, created: now, updated: now, vals: vals}
	t.write(a, r)
	return r, nil
}

// target identifies the record of an update: by id, or by a unique field's value.
type target struct {
	id       int64
	hasID    bool
	keyField string
	keyValue any
	hasKey   bool
}

// find resolves a target. Missing records: GAIA_RE01 (id) or GAIA_RE20 (updateKey).
func (t *tx) find(a *app, tg target) (*record, *apiError) {
	if tg.hasID {
		r := a.records[tg.id]
		if r == nil {
			return nil, errRecordNotFound(strconv.FormatInt(tg.id, 10))
		}
		return r, nil
	}
	f := a.fields[tg.keyField]
	if f == nil || !f.Unique || (f.Type != "SINGLE_LINE_TEXT" && f.Type != "NUMBER") {
		return nil, &apiError{status: 400, code: "GAIA_IQ27", message: fmt.Sprintf("Failed to update record. The field (code: %s) set as \"updateKey\" must be set to \"Prohibit duplicate values\".", tg.keyField)}
	}
	nv, aerr := normalizeValue(f, tg.keyValue, "updateKey")
	if aerr != nil {
		return nil, aerr
	}
	s, _ := nv.(string)
	id, ok := a.unique[f.Code][s]
	if !ok || s == "" {
		return nil, errUpdateKeyNotFound()
	}
	return a.records[id], nil
}

// update applies one PUT item. revision < 0 means unchecked.
func (t *tx) update(a *app, r *record, in fieldInput, revision int64, prefix string) (*record, *apiError) {
	// defect.KintoneIgnoresStaleRevision plants an update that never checks the revision.
	if revision >= 0 && revision != r.rev && !defect.KintoneIgnoresStaleRevision {
		// A write that landed after this request arrived means the two raced; real kintone
		// then sometimes answers GAIA_DA02 instead of GAIA_CO02 (opt-in switch).
		if t.s.opts.RaceDA02 && r.modSeq > t.arrival[a] {
			return nil, errDBLock()
		}
		return nil, errRevision()
	}
	vals, aerr := t.buildValues(a, r.vals, in, prefix, r.id)
	if aerr != nil {
		return nil, aerr
	}
	now := t.now.UTC().Truncate(time.Minute).Format(datetimeLayout)
	nr := &record{id: r.id, rev: r.rev + 1, created: r.created, updated: now, vals: vals}
	t.write(a, nr)
	return nr, nil
}
