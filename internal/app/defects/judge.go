package defects

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/base/excerpt"
	"github.com/ksqlflow/flowtest/internal/harness/schedule"
	"github.com/ksqlflow/flowtest/internal/results"
)

// Row is one line of the table.
type Row struct {
	defect   string
	wall     string // on the first row of a defect only
	Scenario string
	Verdict  string
	Why      string // escape reason
	failing  string // the failing assertion seen
	dur      time.Duration
}

func (r Row) bad() bool {
	return r.Verdict == VerdictEscaped || r.Verdict == VerdictControlBad
}

// judge decides whether a scenario record shows the catch: the scenario failed, and its first
// failing assertion (or, without one, its failing step) is the declared one.
func judge(c Catch, rec *results.Scenario) (verdict, why, failing string) {
	if rec == nil {
		return VerdictEscaped, "no scenario record was written", ""
	}
	switch rec.Status {
	case results.StatusPassed:
		return VerdictEscaped, "the scenario passed", ""
	case results.StatusNotRun:
		return VerdictEscaped, "the scenario did not run: " + rec.Reason, ""
	case results.StatusFailed:
	default:
		return VerdictEscaped, "unknown scenario status " + rec.Status, ""
	}
	// A defect that crashes the SUT proves only that the crash is noticed, not that the
	// scenario's assertion can fail: whatever failed first, it is no catch.
	crash := crashOf(rec, c.ExpectedCodes)
	// The scenario's own order: its steps' assertions, else its failing step, and only then
	// the invariants `flowtest run` checks after the steps (their assertions come last, but
	// a step that failed without an assertion failed before them).
	var a, inv *results.Assertion
	for i := range rec.Assertions {
		switch x := &rec.Assertions[i]; {
		case x.OK:
		case strings.HasPrefix(x.What, schedule.AssertionPrefix):
			if inv == nil {
				inv = x
			}
		case a == nil:
			a = x
		}
	}
	var s *results.Step
	for i := range rec.Steps {
		if rec.Steps[i].Status == "failed" {
			s = &rec.Steps[i]
			break
		}
	}
	if a == nil && s == nil {
		a = inv
	}
	switch {
	case a != nil:
		failing = fmt.Sprintf("%s: expected %s, seen %s", a.What, a.Expected, assertionExcerpt(a.Seen, c.Seen, 40))
		if crash != "" {
			return VerdictEscaped, "crashed: " + crash, failing
		}
		if strings.Contains(a.What, c.Assertion) && (c.Seen == "" || strings.Contains(a.Seen, c.Seen)) {
			return VerdictCaught, "", failing
		}
	case s != nil:
		failing = "step " + s.Text + ": " + s.Error
		if crash != "" {
			return VerdictEscaped, "crashed: " + crash, failing
		}
	default:
		failing = "cleanup: " + rec.Cleanup.Error
		return VerdictEscaped, "failed only in cleanup (no step failed)", failing
	}
	if s != nil && strings.Contains(s.Error, c.Assertion) && (c.Seen == "" || strings.Contains(s.Error, c.Seen)) {
		return VerdictCaught, "", failing
	}
	want := fmt.Sprintf("%q", c.Assertion)
	if c.Seen != "" {
		want += fmt.Sprintf(" seeing %q", c.Seen)
	}
	return VerdictEscaped, "failed for another reason (wanted " + want + ")", failing
}

// stillRunning is what internal/harness/scenario records as the signal of a process that had not
// exited when the record was written.
const stillRunning = "still running when recorded"

// crashOf applies the crash rule to a scenario record: it returns the first sign that a
// process of the scenario did not reach a normal end ("<process>: <why>"), or "".
func crashOf(rec *results.Scenario, expected []string) string {
	exempt := func(code string) bool { return slices.Contains(expected, code) }
	for _, p := range rec.Processes {
		if m := goRuntimeFailure.FindString(p.StderrTail); m != "" {
			return fmt.Sprintf("%s: Go runtime failure %q", p.Name, excerpt.OneLine(m, 120))
		}
		if p.Signal != "" && p.Signal != stillRunning && !harnessSignals[p.Signal] {
			return fmt.Sprintf("%s: ended by %s, a signal the harness never sends", p.Name, p.Signal)
		}
		for _, m := range kintoneErrorCode.FindAllStringIndex(p.StderrTail, -1) {
			if code := p.StderrTail[m[0]:m[1]]; !exempt(code) {
				return fmt.Sprintf("%s: kintone error %s on stderr: %q", p.Name, code, excerpt.OneLine(lineAround(p.StderrTail, m[0]), 160))
			}
		}
		if !isFlowNet(p) {
			continue
		}
		for _, m := range flownetErrorLine.FindAllStringSubmatch(p.StderrTail, -1) {
			if crashCodes[m[1]] && !exempt(m[1]) {
				return fmt.Sprintf("%s: %q", p.Name, excerpt.OneLine(m[0], 160))
			}
		}
		for _, m := range flownetJSONCode.FindAllStringSubmatch(p.StdoutTail, -1) {
			if crashCodes[m[1]] && !exempt(m[1]) {
				return fmt.Sprintf("%s: invocation_result_code %s", p.Name, m[1])
			}
		}
	}
	return ""
}

// isFlowNet tells a FlowNet CLI process from the others (kSQL-Flow, tools): the steps name
// them "flownet-…", the sandbox runs `flowsandbox flownet …`, the real one is dist/cli/index.js.
func isFlowNet(p results.Process) bool {
	if strings.HasPrefix(strings.ToLower(p.Name), "flownet") {
		return true
	}
	for _, a := range p.Argv {
		if a == "flownet" || strings.HasSuffix(filepath.ToSlash(a), "cli/index.js") {
			return true
		}
	}
	return false
}

// lineAround is the line of s that holds byte offset i.
func lineAround(s string, i int) string {
	start := strings.LastIndexByte(s[:i], '\n') + 1
	end := strings.IndexByte(s[i:], '\n')
	if end < 0 {
		return s[start:]
	}
	return s[start : i+end]
}

// Verdicts of one scenario against one defect.
const (
	VerdictCaught     = "yes"
	VerdictEscaped    = "ESCAPED"
	VerdictNotCovered = "not yet covered"
	VerdictControlOK  = "passes"
	VerdictControlBad = "FAILS"
	// VerdictMissed: `flowtest run` of a race defect's scenario passed, as declared (the
	// fixed suite misses it); the exploration's rows give the defect's verdict.
	VerdictMissed = "missed by run"
	// VerdictMetByRun: `flowtest run` of a free race's scenario (`run: either`) failed the
	// declared way by the chance of its order; the exploration's rows give the verdict.
	VerdictMetByRun = "met by run"
	// VerdictNotRun: an exploration `flowtest defects --fast` leaves to the full catalogue.
	// Not run is no verdict: the defect's other rows give it.
	VerdictNotRun = "not run (--fast)"
)

// The crash rule (also in defects.yaml's header and internal/sandbox/defect/doc.go). A scenario run
// under a defect crashed when a process it started (its record's `processes`) shows one of:
//
//  1. a Go runtime failure in its stderr tail: a line starting `panic: ` or `fatal error: `,
//     or a goroutine dump header `goroutine <n> [` (the tail may keep only the dump's end);
//  2. an end by a signal the harness never sends: internal/harness/proc stops with SIGINT or SIGTERM
//     and kills with SIGKILL, so any other signal (SIGSEGV, SIGABRT, SIGBUS, …) is the
//     process's own death. "still running when recorded" is not an end: the scenario failed
//     before the process finished, and the harness stops it afterwards;
//  3. a kintone error code (CB_XXnn, GAIA_XXnn) in its stderr tail: a kintone refusal
//     reached the output instead of being handled (or adjudicated) by the SUT;
//  4. for a FlowNet process, an `Error [<CODE>]` line on stderr, or an --json
//     invocation_result_code, whose code says FlowNet failed instead of deciding an outcome:
//     SCHEDULER_FAILED, a command's fallback code (an error that carried no code of its
//     own), INTERNAL_ERROR, or a repository code that means its own records broke an
//     invariant (crashCodes). Codes a scenario can expect as a decision (RUN_ALREADY_EXISTS,
//     LOCK_CONFLICT, NETWORK_LEASE_INTERRUPTED, REVISION_CONFLICT, REMOTE_ERROR without a
//     kintone code, …) are not crashes.
//
// Exit codes alone are not judged: FlowNet's 1 and kSQL-Flow's 1 to 5 are ordinary ends that
// scenarios assert on, and a Go panic's exit 2 is caught by rule 1.
var (
	goRuntimeFailure = regexp.MustCompile(`(?m)^(panic: |fatal error: |goroutine \d+ \[).*$`)
	kintoneErrorCode = regexp.MustCompile(`\b(?:CB|GAIA)_[A-Z]{2}\d{2}\b`)
	flownetErrorLine = regexp.MustCompile(`(?m)^Error \[([A-Z0-9_]+)\].*$`)
	flownetJSONCode  = regexp.MustCompile(`"invocation_result_code"\s*:\s*"([A-Z0-9_]+)"`)
	// harnessSignals are the signals internal/harness/proc sends, by the names proc records on Unix
	// (and Go's own names, should a record carry them).
	harnessSignals = map[string]bool{"SIGKILL": true, "SIGINT": true, "SIGTERM": true, "killed": true, "interrupt": true, "terminated": true}
	crashCodes     = map[string]bool{
		// The scheduler's own "unexpected error" close (§1.3.2).
		"SCHEDULER_FAILED": true,
		// Command fallbacks (§1.10, §2.2, §2.7): the error had no code of its own.
		"RUN_NETWORK_FAILED": true, "ENSURE_RUN_FAILED": true, "POLL_REQUESTS_FAILED": true, "STATUS_FAILED": true,
		"CANCEL_RUN_FAILED": true, "ARCHIVE_RUN_FAILED": true, "FORCE_UNLOCK_NETWORK_FAILED": true,
		"RESOLVE_NODE_FAILED": true, "RECORD_JOB_UNLOCK_FAILED": true,
		"INTERNAL_ERROR": true,
		// Repository codes (§2.6) that mean FlowNet's own records broke an invariant.
		"DUPLICATE_RECORD": true, "INVALID_STATE_TRANSITION": true, "ATTEMPT_NUMBER_CONFLICT": true,
		"ATTEMPT_TERMINAL": true, "ATTEMPT_LIFECYCLE_VIOLATION": true, "MULTIPLE_RECORDS": true,
		"NODE_STATE_NOT_UNIQUE": true, "UNIQUE_KEY_TOO_LONG": true, "AUDIT_CONFLICT": true,
	}
)
