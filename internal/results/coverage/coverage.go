package coverage

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

// Entry is one subject of the map: the scenarios whose assertions read it, or why none does.
type Entry struct {
	Subject
	Scenarios []string `json:"scenarios"`
	// Reason is docs/coverage.md's entry for a subject no assertion reads; empty when it is
	// read or when the entry is missing.
	Reason string `json:"reason,omitempty"`
}

// Map is the coverage of one run's records. Subjects are the universe's; Observed are the
// subjects of flowtest's own observations (Observed namespaces); Unknown are subjects an
// assertion named that are neither (a misspelt subject).
type Map struct {
	SchemaVersion int     `json:"schema_version"`
	Archive       string  `json:"archive,omitempty"` // the archive read (flowtest coverage)
	Scenarios     int     `json:"scenarios"`         // records read (of scenarios that ran)
	Subjects      []Entry `json:"subjects"`
	Observed      []Entry `json:"observed"`
	Unknown       []Entry `json:"unknown"`
	Read          int     `json:"read"`
	Unread        int     `json:"unread"`
	// Undocumented are the unread subjects docs/coverage.md gives no reason for.
	Undocumented []string `json:"undocumented"`
}

// Failed reports whether the map is not acceptable: an unread subject without a reason, or
// an assertion naming a subject that does not exist.
func (m *Map) Failed() bool { return len(m.Undocumented) > 0 || len(m.Unknown) > 0 }

// Build maps the records' assertions onto the universe. reasons are docs/coverage.md's
// entries (ParseReasons).
func Build(recs []*record.Scenario, reasons Reasons) *Map {
	readers := map[string][]string{}
	ran := 0
	for _, r := range recs {
		if len(r.Steps) == 0 {
			continue // not run: it asserted nothing
		}
		ran++
		for _, a := range r.Assertions {
			for _, s := range a.Subjects {
				if !slices.Contains(readers[s], r.ID) {
					readers[s] = append(readers[s], r.ID)
				}
			}
		}
	}
	m := &Map{SchemaVersion: 1, Scenarios: ran, Observed: []Entry{}, Unknown: []Entry{}, Undocumented: []string{}}
	for _, s := range Universe() {
		e := Entry{Subject: s, Scenarios: sorted(readers[s.Name])}
		delete(readers, s.Name)
		if len(e.Scenarios) > 0 {
			m.Read++
		} else {
			m.Unread++
			e.Reason = reasons.For(s.Name)
			if e.Reason == "" {
				m.Undocumented = append(m.Undocumented, s.Name)
			}
		}
		m.Subjects = append(m.Subjects, e)
	}
	names := make([]string, 0, len(readers))
	for n := range readers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		e := Entry{Subject: Subject{Name: n}, Scenarios: sorted(readers[n])}
		if Valid(n) {
			m.Observed = append(m.Observed, e)
		} else {
			m.Unknown = append(m.Unknown, e)
		}
	}
	return m
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	if s == nil {
		return []string{}
	}
	slices.Sort(s)
	return s
}

// Reasons are docs/coverage.md's entries: why a subject is not asserted. A name ending in
// ".*" gives the reason for every subject under it (a group the same reason covers whole).
type Reasons map[string]string

// For is the reason for the subject: its own entry, else the longest group entry over it.
func (r Reasons) For(name string) string {
	if v, ok := r[name]; ok {
		return v
	}
	best, reason := 0, ""
	for k, v := range r {
		if p, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(name, p) && len(p) > best {
			best, reason = len(p), v
		}
	}
	return reason
}

// reasonsHeading is the section of docs/coverage.md whose table ParseReasons reads.
const reasonsHeading = "## Unread subjects"

// ParseReasons reads the table of docs/coverage.md's "Unread subjects" section: rows
// `| `subject` | reason |`. A row whose subject is not of the universe (nor a group of it)
// is an error, so a stale entry cannot stay.
func ParseReasons(md []byte) (Reasons, error) {
	r := Reasons{}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(md))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == reasonsHeading
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, " | ")
		if len(cells) < 2 {
			return nil, fmt.Errorf("docs/coverage.md:%d: a row of the unread subjects without a reason", n)
		}
		name := strings.Trim(strings.TrimPrefix(cells[0], "| "), "`")
		reason := strings.TrimSpace(strings.TrimSuffix(strings.Join(cells[1:], " | "), "|"))
		if reason == "" {
			return nil, fmt.Errorf("docs/coverage.md:%d: %s has an empty reason", n, name)
		}
		if !knownOrGroup(name) {
			return nil, fmt.Errorf("docs/coverage.md:%d: %s is not a subject of the universe", n, name)
		}
		if _, dup := r[name]; dup {
			return nil, fmt.Errorf("docs/coverage.md:%d: %s has two entries", n, name)
		}
		r[name] = reason
	}
	if len(r) == 0 {
		return nil, fmt.Errorf("docs/coverage.md has no %q table", reasonsHeading)
	}
	return r, nil
}

func knownOrGroup(name string) bool {
	p, group := strings.CutSuffix(name, "*")
	return slices.ContainsFunc(Universe(), func(s Subject) bool {
		return s.Name == name || group && strings.HasPrefix(s.Name, p)
	})
}

// WriteText prints the map: one line per subject with its scenarios or its reason, then
// the observed and unknown subjects and the counts.
func (m *Map) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, e := range m.Subjects {
		switch {
		case len(e.Scenarios) > 0:
			fmt.Fprintf(&b, "read    %s: %s\n", e.Name, strings.Join(e.Scenarios, ", "))
		case e.Reason != "":
			fmt.Fprintf(&b, "unread  %s: %s\n", e.Name, e.Reason)
		default:
			fmt.Fprintf(&b, "UNREAD  %s: no assertion reads it and docs/coverage.md gives no reason\n", e.Name)
		}
	}
	for _, e := range m.Observed {
		fmt.Fprintf(&b, "observed %s: %s\n", e.Name, strings.Join(e.Scenarios, ", "))
	}
	for _, e := range m.Unknown {
		fmt.Fprintf(&b, "UNKNOWN %s (not a subject of docs/coverage.md): %s\n", e.Name, strings.Join(e.Scenarios, ", "))
	}
	fmt.Fprintf(&b, "%d subjects: %d read, %d unread (%d without a reason in docs/coverage.md), %d unknown; %d observed; from %d scenarios\n",
		len(m.Subjects), m.Read, m.Unread, len(m.Undocumented), len(m.Unknown), len(m.Observed), m.Scenarios)
	_, err := io.WriteString(w, b.String())
	return err
}
