package emulator

import (
	"sort"
	"strconv"
	"strings"
)

// Running a compiled query: index hint or scan, filter, order, then offset/limit.

// run evaluates q over a's records (caller holds a.mu for reading) and returns the page and
// the total match count.
func (q *query) run(a *app) (page []*record, total int) {
	var matched []*record
	if q.hint != nil {
		seen := map[int64]bool{}
		for _, v := range q.hint.values {
			var id int64
			var ok bool
			if q.hint.code == "" {
				n, err := strconv.ParseInt(v, 10, 64)
				id, ok = n, err == nil
			} else {
				id, ok = a.unique[q.hint.code][v]
			}
			if !ok || seen[id] {
				continue
			}
			seen[id] = true
			if r := a.records[id]; r != nil && (q.where == nil || q.where(r)) {
				matched = append(matched, r)
			}
		}
	} else {
		matched = make([]*record, 0, 64)
		for i := len(a.ids) - 1; i >= 0; i-- {
			r := a.records[a.ids[i]]
			if q.where == nil || q.where(r) {
				matched = append(matched, r)
			}
		}
	}
	sortRecords(matched, q.order)
	total = len(matched)
	if q.offset >= len(matched) {
		return nil, total
	}
	matched = matched[q.offset:]
	if len(matched) > q.limit {
		matched = matched[:q.limit]
	}
	return matched, total
}

func sortRecords(rs []*record, order []orderKey) {
	if len(order) == 0 {
		sort.Slice(rs, func(i, j int) bool { return rs[i].id > rs[j].id })
		return
	}
	sort.SliceStable(rs, func(i, j int) bool {
		for _, k := range order {
			c := compareField(k.f, rs[i], rs[j])
			if c == 0 {
				continue
			}
			if k.desc {
				return c > 0
			}
			return c < 0
		}
		return rs[i].id > rs[j].id
	})
}

func compareField(f *qfield, x, y *record) int {
	switch f.kind {
	case kID, kRecNo:
		return cmpInt(x.id, y.id)
	case kNumber:
		xs, _ := f.get(x).(string)
		ys, _ := f.get(y).(string)
		if xs == "" || ys == "" {
			return cmpBool(xs != "", ys != "")
		}
		xf, _ := strconv.ParseFloat(xs, 64)
		yf, _ := strconv.ParseFloat(ys, 64)
		switch {
		case xf < yf:
			return -1
		case xf > yf:
			return 1
		}
		return 0
	}
	xs, _ := f.get(x).(string)
	ys, _ := f.get(y).(string)
	return strings.Compare(xs, ys)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}
