package safety

import (
	"fmt"
	"io"
	"strings"
)

// ExitViolation is the exit code of `flowtest run` / `flowtest check` when a
// check fails.
const ExitViolation = 2

// Check is one evaluated rule for one subject (a variable, flag or file).
type Check struct {
	Name    string
	Subject string
	OK      bool
	Reason  string
}

// Report is the ordered list of evaluated checks.
type Report struct {
	Checks []Check
}

// Violations returns the failed checks in order.
func (r Report) Violations() []Check {
	var v []Check
	for _, c := range r.Checks {
		if !c.OK {
			v = append(v, c)
		}
	}
	return v
}

// OK reports whether no check failed.
func (r Report) OK() bool { return len(r.Violations()) == 0 }

// Merge appends other's checks.
func (r Report) Merge(other Report) Report {
	return Report{Checks: append(append([]Check(nil), r.Checks...), other.Checks...)}
}

func (r *Report) pass(name, subject, reason string, args ...any) {
	r.Checks = append(r.Checks, Check{Name: name, Subject: subject, OK: true, Reason: fmt.Sprintf(reason, args...)})
}

func (r *Report) fail(name, subject, reason string, args ...any) {
	r.Checks = append(r.Checks, Check{Name: name, Subject: subject, OK: false, Reason: fmt.Sprintf(reason, args...)})
}

// FormatReport writes one line per check: PASS/FAIL, name, subject, reason
// (the `flowtest check` output). Reasons never contain token values.
func FormatReport(w io.Writer, rep Report) error {
	return format(w, rep.Checks)
}

// FormatViolations writes one line per failed check only (the `flowtest run`
// refusal output).
func FormatViolations(w io.Writer, rep Report) error {
	return format(w, rep.Violations())
}

func format(w io.Writer, checks []Check) error {
	nameW, subjW := 0, 0
	for _, c := range checks {
		nameW = max(nameW, len(c.Name))
		subjW = max(subjW, len(c.Subject))
	}
	for _, c := range checks {
		status := "PASS"
		if !c.OK {
			status = "FAIL"
		}
		subj := c.Subject
		if subj == "" {
			subj = "-"
		}
		line := fmt.Sprintf("%s  %-*s  %-*s  %s", status, nameW, c.Name, subjW, subj, lineBreaksToSpaces(c.Reason))
		if _, err := fmt.Fprintln(w, strings.TrimRight(line, " ")); err != nil {
			return fmt.Errorf("write safety report: %w", err)
		}
	}
	return nil
}

// lineBreaksToSpaces keeps "one line per check" true even for reasons built from
// multi-line values.
func lineBreaksToSpaces(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}
