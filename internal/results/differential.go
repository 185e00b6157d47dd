package results

// The differential record of a scenario (issue 41, item 5): the records its runs left in
// the state and audit apps and its FlowNet processes' exit codes and stdout line heads, in a
// normalised form, so that the same scenario run on the real and on the reference FlowNet
// compares equal when the two behave alike. Normalising replaces what differs between any
// two runs (record ids, revisions, timestamps, invocation/run ids, hosts, tokens, app ids)
// with placeholders numbered in first-seen order: equal structure compares equal, and a
// value referenced from two records keeps one placeholder in both.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// RawRecord is a record as read: field code to value as a string, and field code to its
// kintone field type (for the system fields, which are dropped).
type RawRecord struct {
	App    string
	Fields map[string]string
	Types  map[string]string
}

// dropTypes are kintone system fields: they differ per app and run and say nothing of FlowNet.
var dropTypes = map[string]bool{"RECORD_NUMBER": true, "__ID__": true, "__REVISION__": true,
	"CREATOR": true, "MODIFIER": true, "CREATED_TIME": true, "UPDATED_TIME": true, "STATUS_ASSIGNEE": true,
	"STATUS": true, "CATEGORY": true}

var (
	reTime = regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?`)
	reHost = regexp.MustCompile(`(?i)\b(https?://)?(127\.0\.0\.1|localhost|\[::1\])(:\d+)?`)
	// A UUID may follow a prefix joined by '_' (netrun_…), where \b finds no boundary.
	reUUID = regexp.MustCompile(`(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	// Long hex ids and digests, and their 12-digit prefixes (kSQL-Flow's input_files sha256).
	reHexID = regexp.MustCompile(`(?i)\b[0-9a-f]{12,}\b`)
	// rePID is the process id of a FlowNet instance id (local-pid://<host>/<pid>).
	rePID = regexp.MustCompile(`(local-pid://[^"\s/]*/)\d+`)
	reNum = regexp.MustCompile(`^-?\d+(\.\d+)?$`)
	// reSize is a FILE field's byte size: an attached bundle's zip holds the run's names and
	// times, so its size differs between two runs of one FlowNet too.
	reSize = regexp.MustCompile(`"size":"\d+"`)
	// reArchive is the directory part of a file URL into the run's own archive (the steps
	// give FlowNet the scenario's record there as evidence: file:///…/<run>/scenarios/<id>.json);
	// the archive directory is named by the run's start time, so it differs between any two
	// runs. What follows /scenarios/ (the scenario id, a #fragment) is still compared.
	reArchive = regexp.MustCompile(`file://[^"\s#?]*/scenarios/`)
	// reAppRequest is the request record's $id in the requester FlowNet names for a request
	// from the request app (app-request:<$id>:<creator>): a kintone record id, which differs
	// between any two runs on a tenant.
	reAppRequest = regexp.MustCompile(`\bapp-request:(\d+):`)
)

// isIDField says a field holds an identifier of one run (never compared by value). The
// names a network definition gives (nodes, jobs, the network) are not: they are the same in
// every run once the scope is replaced, and compared as text.
func isIDField(code string) bool {
	c := strings.ToLower(code)
	switch {
	case strings.HasSuffix(c, "node_id"), strings.HasSuffix(c, "node_ids"), c == "job_id", c == "network_id":
		return false
	case c == "id", c == "$id", c == "$revision", c == "revision", c == "host", c == "hostname", c == "pid":
		return true
	case strings.HasSuffix(c, "_id"), strings.HasSuffix(c, "_ids"), strings.Contains(c, "token"),
		strings.HasSuffix(c, "_host"), strings.HasSuffix(c, "_key"), strings.HasSuffix(c, "_pid"):
		return true
	}
	return false
}

// isReference says an id field names another record's id.
func isReference(code string) bool {
	c := strings.ToLower(code)
	for _, p := range []string{"active_", "owner_", "parent_", "previous_", "blocked_", "resumed_", "source_", "latest_"} {
		if strings.HasPrefix(c, p) {
			return true
		}
	}
	return false
}

// isTimeField says a field holds a time or a duration of one run.
func isTimeField(code string) bool {
	c := strings.ToLower(code)
	return strings.HasSuffix(c, "_at") || strings.HasSuffix(c, "_until") || strings.HasPrefix(c, "duration") ||
		strings.HasSuffix(c, "_sec") || strings.HasSuffix(c, "_ms") || strings.HasSuffix(c, "_time") || c == "heartbeat"
}

// normaliser numbers identifiers in first-seen order across one scenario, per kind (the
// field's last two words: node_attempt_id and active_attempt_id are both attempt_id), so
// that one extra id of one kind does not renumber every id after it.
type normaliser struct {
	ids    map[string]string
	count  map[string]int
	order  []string // seen ids, longest first when replacing inside text
	scopes []string // the scenario's scope id and its short markers, longest first
	// free is the prefix of the kinds of ids found in free text by their form alone (UUIDs,
	// hex ids): "stdout_" while processes' output is normalised, so that an id a record's
	// text held (often a field the archive redacts) shifts no number of those printed.
	free string
}

// idKind is the kind of the id a field holds.
func idKind(code string) string {
	c := strings.TrimPrefix(strings.ToLower(code), "$")
	w := strings.Split(c, "_")
	if len(w) > 2 {
		w = w[len(w)-2:]
	}
	return strings.Join(w, "_")
}

func (n *normaliser) id(kind, v string) string {
	if v == "" {
		return ""
	}
	if p, ok := n.ids[v]; ok {
		return p
	}
	n.count[kind]++
	p := fmt.Sprintf("<%s#%d>", kind, n.count[kind])
	n.ids[v] = p
	n.order = append(n.order, v)
	sort.SliceStable(n.order, func(i, j int) bool { return len(n.order[i]) > len(n.order[j]) })
	return p
}

// text normalises free text (JSON in a field, a stdout line): JSON is re-encoded with its
// keys sorted; times, hosts, the scenario's scope, UUID-like and long hex ids, and every id
// already seen in an id field are replaced.
func (n *normaliser) text(s string) string {
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		var v any
		if json.Unmarshal([]byte(t), &v) == nil {
			if b, err := json.Marshal(v); err == nil {
				s = string(b)
			}
		}
	}
	s = n.unscope(s)
	s = reSize.ReplaceAllString(s, `"size":"<size>"`)
	s = rePostReleaseRevision.ReplaceAllString(s, `"post_release_revision":"<revision>"`)
	s = reArchive.ReplaceAllString(s, "file://<archive>/scenarios/")
	s = reTime.ReplaceAllString(s, "<time>")
	s = reHost.ReplaceAllString(s, "<host>")
	s = rePID.ReplaceAllString(s, "${1}<pid>")
	for _, v := range n.order {
		if len(v) >= 4 && !reNum.MatchString(v) {
			s = strings.ReplaceAll(s, v, n.ids[v])
		}
	}
	s = reCanonicalKey.ReplaceAllStringFunc(s, func(v string) string { return n.id("canonical_key", v) })
	s = reAppRequest.ReplaceAllStringFunc(s, func(v string) string {
		// Keyed apart from the bare number (another record's id may be the same number);
		// the key never occurs in text, so only this pattern replaces it.
		return "app-request:" + n.id("request_id", "app-request#"+reAppRequest.FindStringSubmatch(v)[1]) + ":"
	})
	s = reUUID.ReplaceAllStringFunc(s, func(v string) string { return n.id(n.free+"uuid", v) })
	s = reHexID.ReplaceAllStringFunc(s, func(v string) string { return n.id(n.free+"hex", v) })
	return s
}

// unscope replaces the scenario's scope markers by "<scope>".
func (n *normaliser) unscope(s string) string {
	for _, m := range n.scopes {
		if m != "" {
			s = strings.ReplaceAll(s, m, "<scope>")
		}
	}
	return s
}

// reCanonicalKey is one of FlowNet's canonical keys (N1 lock key, R1 run key, S1, A1, J1: a
// two-character prefix, ':' and 43 base64url characters of a SHA-256): each hashes names that
// hold the scope, so it differs between any two runs. An N1 key is printed by
// force-unlock-network but held by no record once the lock is released. Replaced after the ids
// already seen, so that a key a record holds keeps that record's placeholder.
var reCanonicalKey = regexp.MustCompile(`\b[A-Z]1:[A-Za-z0-9_-]{43}`)

// idValue normalises the value of an id field: the scope replaced, then numbered.
func (n *normaliser) idValue(code, v string) string {
	if u := n.unscope(v); u != v {
		v = u
		if !strings.ContainsAny(strings.ReplaceAll(v, "<scope>", ""), "0123456789") {
			return v // a definition's name made unique by the scope: stable once it is replaced
		}
	}
	return n.id(idKind(code), v)
}

// NormaliseHistory normalises the records (in the order read: by app, then creation) and
// processes of one scenario. appIDs are the target's app ids, replaced by their roles
// wherever they appear as a value; scopes are the scenario's scope id and its short
// markers (they name the scenario's networks, jobs and principals, and differ per run),
// replaced by "<scope>".
func NormaliseHistory(recs []RawRecord, procs []Process, appIDs map[string]string, scopes []string) *Differential {
	scopes = append([]string(nil), scopes...)
	sort.SliceStable(scopes, func(i, j int) bool { return len(scopes[i]) > len(scopes[j]) })
	n := &normaliser{ids: map[string]string{}, count: map[string]int{}, scopes: scopes}
	byID := map[string]string{}
	for role, id := range appIDs {
		if id != "" {
			byID[id] = "<app:" + role + ">"
		}
	}
	d := &Differential{Records: []DiffRecord{}, Processes: []DiffProcess{}}
	// First pass: number the ids of id fields in record order so that text seen later
	// (a reason JSON naming a run) uses the same placeholders.
	// Ids a record holds of itself come first, references to others (active_attempt_id,
	// owner_invocation_id, …) after: a reference one FlowNet leaves empty then renumbers
	// nothing.
	for _, refs := range []bool{false, true} {
		for _, r := range recs {
			for _, code := range sortedKeys(r.Fields) {
				if isReference(code) != refs || !isIDField(code) || dropTypes[r.Types[code]] {
					continue
				}
				if _, app := byID[r.Fields[code]]; !app && !reNum.MatchString(r.Fields[code]) {
					n.idValue(code, r.Fields[code])
				}
			}
		}
	}
	for _, r := range recs {
		out := DiffRecord{App: r.App, Type: r.Fields["record_type"], Fields: map[string]string{}}
		for _, code := range sortedKeys(r.Fields) {
			v := r.Fields[code]
			switch {
			case code == "record_type" || code == "$id" || code == "$revision" || dropTypes[r.Types[code]]:
				continue
			case byID[v] != "":
				v = byID[v]
			case v == "":
			case code == "revision" && r.Fields["record_type"] == "NETWORK_LOCK":
				// The lock's business revision counts its heartbeats: how many landed is the
				// timing of one run. Not numbered either, which would shift the numbers the
				// Node States' revisions (counts of state writes) are given after it.
				v = "<lock_revision>"
			case isIDField(code):
				v = n.idValue(code, v)
			case isTimeField(code):
				v = "<time>"
			default:
				v = n.text(v)
			}
			out.Fields[code] = v
		}
		d.Records = append(d.Records, out)
	}
	n.free = "stdout_"
	for _, p := range procs {
		dp := DiffProcess{Name: p.Name, ExitCode: p.ExitCode}
		for _, line := range strings.Split(strings.TrimRight(p.StdoutTail, "\n"), "\n") {
			if line = strings.TrimSpace(line); line != "" {
				line = rePostRevision.ReplaceAllString(line, "${1}<revision>")
				dp.StdoutHead = append(dp.StdoutHead, lineHead(n.text(idNumberLine(line))))
			}
		}
		d.Processes = append(d.Processes, dp)
	}
	return d
}

// rePostRevision is force-unlock-network's "post revision <n>": the lock record's kintone
// $revision after the release, which counts the heartbeats written before it (timing).
var rePostRevision = regexp.MustCompile(`(post revision )\d+`)

// rePostReleaseRevision is the same $revision in force-unlock's audit JSON.
var rePostReleaseRevision = regexp.MustCompile(`"post_release_revision":\d+`)

// reKeyNumber is a line of pretty-printed JSON or of a "key: value" text form whose value is
// a number: `"revision": 3,` or `revision: 3`.
var reKeyNumber = regexp.MustCompile(`^("?)([A-Za-z_$]+)("?:\s*)-?\d+(,?)$`)

// idNumberLine replaces the number of such a line when its key is an id field (records
// never compare these by value either): a Network lock's business revision, printed by
// status, counts the lease writes of the run that holds it, and how many heartbeats landed
// before the status read is the timing of one run.
func idNumberLine(line string) string {
	m := reKeyNumber.FindStringSubmatch(line)
	if m == nil || !isIDField(m[2]) {
		return line
	}
	return m[1] + m[2] + m[3] + "<" + strings.ToLower(strings.TrimPrefix(m[2], "$")) + ">" + m[4]
}

// lineHead is the head of a stdout line: at most 80 characters.
func lineHead(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:80])
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Difference is one difference between two archives' differential records.
type Difference struct {
	Scenario string `json:"scenario"`
	Path     string `json:"path"`
	A        string `json:"a"`
	B        string `json:"b"`
}

const absent = "<absent>"

// DiffScenarios compares two scenarios' differential records (either may be nil: the
// scenario was not run or not read on that side).
func DiffScenarios(id string, a, b *Scenario) []Difference {
	var out []Difference
	add := func(path, va, vb string) {
		if va != vb {
			out = append(out, Difference{Scenario: id, Path: path, A: va, B: vb})
		}
	}
	if a == nil || b == nil {
		sa, sb := absent, absent
		if a != nil {
			sa = a.Status
		}
		if b != nil {
			sb = b.Status
		}
		add("status", sa, sb)
		return out
	}
	add("status", a.Status, b.Status)
	da, db := a.Differential, b.Differential
	if da == nil || db == nil {
		if (da == nil) != (db == nil) {
			add("differential", present(da != nil), present(db != nil))
		}
		return out
	}
	ga, gb := groupRecords(da.Records), groupRecords(db.Records)
	for _, key := range unionKeys(ga, gb) {
		ra, rb := ga[key], gb[key]
		add(key+".count", fmt.Sprint(len(ra)), fmt.Sprint(len(rb)))
		for i := 0; i < len(ra) || i < len(rb); i++ {
			var fa, fb map[string]string
			if i < len(ra) {
				fa = ra[i].Fields
			}
			if i < len(rb) {
				fb = rb[i].Fields
			}
			if fa == nil || fb == nil {
				continue // counted above
			}
			for _, f := range unionKeys(fa, fb) {
				va, oka := fa[f]
				vb, okb := fb[f]
				if !oka {
					va = absent
				}
				if !okb {
					vb = absent
				}
				add(fmt.Sprintf("%s[%d].%s", key, i, f), va, vb)
			}
		}
	}
	pa, pb := procGroups(da.Processes), procGroups(db.Processes)
	for _, key := range unionKeys(pa, pb) {
		la, lb := pa[key], pb[key]
		add("process/"+key+".count", fmt.Sprint(len(la)), fmt.Sprint(len(lb)))
		for i := 0; i < len(la) && i < len(lb); i++ {
			p := fmt.Sprintf("process/%s[%d]", key, i)
			add(p+".exit_code", exitText(la[i].ExitCode), exitText(lb[i].ExitCode))
			for _, d := range alignLines(la[i].StdoutHead, lb[i].StdoutHead) {
				add(p+".stdout["+d.at+"]", d.a, d.b)
			}
		}
	}
	return out
}

// lineDiff is one stdout line that differs: at is its index in A, or "b<index in B>" for a
// line only B printed.
type lineDiff struct{ at, a, b string }

// maxAlignCells bounds the table alignLines builds; longer outputs are compared line by line.
const maxAlignCells = 4 << 20

// alignLines compares two processes' stdout lines. The lines both printed in the same order
// (a longest common subsequence) are matched; between two matched lines, the lines A and B
// printed instead are paired in order (a changed line) and the rest reported against
// <absent> (a line only one printed). One extra or missing line, or a block of them (a
// status with one more node state, a null where the other prints an object), is then one
// difference per line it concerns, not a shift of every line after it; every line that
// differs is still reported.
func alignLines(a, b []string) []lineDiff {
	var out []lineDiff
	pair := func(i, j int) {
		switch {
		case i < len(a) && j < len(b):
			if a[i] != b[j] {
				out = append(out, lineDiff{fmt.Sprint(i), a[i], b[j]})
			}
		case i < len(a):
			out = append(out, lineDiff{fmt.Sprint(i), a[i], absent})
		default:
			out = append(out, lineDiff{fmt.Sprintf("b%d", j), absent, b[j]})
		}
	}
	if (len(a)+1)*(len(b)+1) > maxAlignCells {
		for j := 0; j < len(a) || j < len(b); j++ {
			pair(j, j)
		}
		return out
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:] and b[j:].
	w := len(b) + 1
	lcs := make([]int32, (len(a)+1)*w)
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	// flush reports the unmatched lines a[i0:i] and b[j0:j], paired in order.
	flush := func(i0, i, j0, j int) {
		for k := 0; i0+k < i || j0+k < j; k++ {
			ia, jb := i0+k, j0+k
			if ia >= i {
				ia = len(a) // none left on A's side
			}
			if jb >= j {
				jb = len(b)
			}
			pair(ia, jb)
		}
	}
	i, j, i0, j0 := 0, 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j] && lcs[i*w+j] == lcs[(i+1)*w+j+1]+1:
			flush(i0, i, j0, j)
			i, j = i+1, j+1
			i0, j0 = i, j
		case lcs[(i+1)*w+j] >= lcs[i*w+j+1]:
			i++
		default:
			j++
		}
	}
	flush(i0, len(a), j0, len(b))
	return out
}

func present(b bool) string {
	if b {
		return "present"
	}
	return absent
}

func exitText(c *int) string {
	if c == nil {
		return "null"
	}
	return fmt.Sprint(*c)
}

func groupRecords(rs []DiffRecord) map[string][]DiffRecord {
	g := map[string][]DiffRecord{}
	for _, r := range rs {
		k := r.App + "/" + r.Type
		g[k] = append(g[k], r)
	}
	return g
}

func procGroups(ps []DiffProcess) map[string][]DiffProcess {
	g := map[string][]DiffProcess{}
	for _, p := range ps {
		g[p.Name] = append(g[p.Name], p)
	}
	return g
}

func unionKeys[V any](a, b map[string]V) []string {
	seen := map[string]bool{}
	var ks []string
	for _, m := range []map[string]V{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				ks = append(ks, k)
			}
		}
	}
	sort.Strings(ks)
	return ks
}
