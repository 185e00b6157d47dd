package safety

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
)

// DenyList is the production deny list: app ids, job ids and profiles that
// flowtest must never touch. Operators maintain it in a file in the
// repository (safety/production-denylist.txt) plus the environment variable
// FLOWTEST_PRODUCTION_DENYLIST.
//
// Entry syntax, one per line in the file, separated by commas, semicolons or
// whitespace in the variable:
//
//	app:4261        a production kintone app id (canonical decimal)
//	job:intake_count  a production kSQL-Flow job id
//	profile:prod    a production profile
//
// '#' starts a comment in the file. Profiles and job ids are compared after
// trimming and case-folding (fail closed: "Intake_Count" is refused too).
type DenyList struct {
	Apps     []string
	Jobs     []string
	Profiles []string
}

// Empty reports whether the list has no entry at all.
func (d DenyList) Empty() bool { return len(d.Apps)+len(d.Jobs)+len(d.Profiles) == 0 }

// Merge returns the union of d and o.
func (d DenyList) Merge(o DenyList) DenyList {
	out := DenyList{
		Apps:     append(slices.Clone(d.Apps), o.Apps...),
		Jobs:     append(slices.Clone(d.Jobs), o.Jobs...),
		Profiles: append(slices.Clone(d.Profiles), o.Profiles...),
	}
	for _, l := range []*[]string{&out.Apps, &out.Jobs, &out.Profiles} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
	}
	return out
}

// HasApp reports whether an app id is denied (ids compared canonically, so a
// non-canonical spelling of a denied id is still caught).
func (d DenyList) HasApp(id string) bool {
	c := canonicalDigits(strings.TrimSpace(id))
	for _, a := range d.Apps {
		if canonicalDigits(a) == c {
			return true
		}
	}
	return false
}

// HasJob reports whether a job id, or the original name inside a
// KSQL_FLOW_TEST_<8 hex>_ re-prefixed job id, is denied.
func (d DenyList) HasJob(id string) bool {
	cands := []string{fold(id)}
	if base, ok := stripJobPrefix(id); ok {
		cands = append(cands, fold(base))
	}
	for _, j := range d.Jobs {
		if slices.Contains(cands, fold(j)) {
			return true
		}
	}
	return false
}

// HasProfile reports whether a profile is denied.
func (d DenyList) HasProfile(p string) bool {
	for _, x := range d.Profiles {
		if fold(x) == fold(p) {
			return true
		}
	}
	return false
}

func fold(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// canonicalDigits strips leading zeros and a leading '+' so "04249" and
// "4249" compare equal; non-digit input is returned unchanged.
func canonicalDigits(s string) string {
	t := strings.TrimPrefix(s, "+")
	t = strings.TrimSuffix(t, ".0")
	for _, r := range t {
		if r < '0' || r > '9' {
			return s
		}
	}
	t = strings.TrimLeft(t, "0")
	if t == "" {
		return "0"
	}
	return t
}

// stripJobPrefix returns <name> from KSQL_FLOW_TEST_<8 hex>_<name>.
func stripJobPrefix(id string) (string, bool) {
	rest, ok := strings.CutPrefix(id, TestPrefix)
	if !ok || len(rest) < 10 || rest[8] != '_' {
		return "", false
	}
	for _, r := range rest[:8] {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return "", false
		}
	}
	return rest[9:], true
}

// ParseDenyList reads the file format. source names the file in errors.
// Malformed lines are errors: a deny list that silently drops an entry is
// worse than none.
func ParseDenyList(r io.Reader, source string) (DenyList, error) {
	var d DenyList
	var errs []string
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 {
			text = strings.TrimPrefix(text, "\uFEFF")
		}
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		if err := d.add(text); err != nil {
			errs = append(errs, fmt.Sprintf("%s:%d: %v", source, line, err))
		}
	}
	if err := sc.Err(); err != nil {
		return d, fmt.Errorf("read deny list %s:%d: %w", source, line+1, err)
	}
	if len(errs) > 0 {
		return d, fmt.Errorf("deny list: %s", joinFirst(errs, 3))
	}
	return d, nil
}

// joinFirst joins the first n messages and counts the rest, so that a file of wrong format
// gives a readable line rather than one error per line of it.
func joinFirst(msgs []string, n int) string {
	if len(msgs) <= n {
		return strings.Join(msgs, "; ")
	}
	return fmt.Sprintf("%s; and %d more malformed lines", strings.Join(msgs[:n], "; "), len(msgs)-n)
}

// ParseDenyListEntries reads the environment-variable form.
func ParseDenyListEntries(s, source string) (DenyList, error) {
	var d DenyList
	var errs []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	}) {
		if err := d.add(f); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", source, err))
		}
	}
	if len(errs) > 0 {
		return d, fmt.Errorf("deny list: %s", joinFirst(errs, 3))
	}
	return d, nil
}

func (d *DenyList) add(entry string) error {
	kind, val, ok := strings.Cut(entry, ":")
	val = strings.TrimSpace(val)
	if !ok || val == "" {
		return fmt.Errorf("entry %q is not kind:value (kinds: app, job, profile)", entry)
	}
	switch strings.ToLower(strings.TrimSpace(kind)) {
	case "app":
		if err := canonicalAppID(val); err != nil {
			return fmt.Errorf("entry %q: %v", entry, err)
		}
		d.Apps = append(d.Apps, val)
	case "job":
		d.Jobs = append(d.Jobs, val)
	case "profile":
		d.Profiles = append(d.Profiles, val)
	default:
		return fmt.Errorf("entry %q has unknown kind %q (kinds: app, job, profile)", entry, kind)
	}
	return nil
}
