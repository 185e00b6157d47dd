package coverage

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

func rec(id string, ran bool, subjects ...[]string) *record.Scenario {
	r := &record.Scenario{ID: id}
	if ran {
		r.Steps = []record.Step{{Text: "a step", Status: "passed"}}
	}
	for _, s := range subjects {
		r.Assertions = append(r.Assertions, record.Assertion{What: "w", Subjects: s})
	}
	return r
}

func entry(m *Map, name string) *Entry {
	for i := range m.Subjects {
		if m.Subjects[i].Name == name {
			return &m.Subjects[i]
		}
	}
	return nil
}

// A subject read by two scenarios lists both; one nobody reads takes its reason, or is
// undocumented; a group reason covers its members; a not-run scenario reads nothing; observed
// and unknown subjects are kept apart.
func TestBuildMapsSubjectsToScenarios(t *testing.T) {
	recs := []*record.Scenario{
		rec("m5-b", true, []string{"state.NETWORK_RUN.status"}, []string{"state.NETWORK_RUN.status", "process.exit-code"}),
		rec("m5-a", true, []string{"state.NETWORK_RUN.status"}, []string{"state.NODE_STATE.colour"}),
		rec("m6-x", false, []string{"request.request_state"}),
	}
	reasons := Reasons{"exit.plan": "no scenario runs plan", "joblog.*": "kSQL-Flow's own"}
	m := Build(recs, reasons)
	if got := entry(m, "state.NETWORK_RUN.status").Scenarios; strings.Join(got, ",") != "m5-a,m5-b" {
		t.Errorf("readers of state.NETWORK_RUN.status: %v", got)
	}
	if e := entry(m, "request.request_state"); len(e.Scenarios) != 0 || e.Reason != "" {
		t.Errorf("a not-run scenario's assertion counted: %+v", e)
	}
	if e := entry(m, "exit.plan"); e.Reason != "no scenario runs plan" {
		t.Errorf("reason of exit.plan: %q", e.Reason)
	}
	if e := entry(m, "joblog.git_ref"); e.Reason != "kSQL-Flow's own" {
		t.Errorf("group reason of joblog.git_ref: %q", e.Reason)
	}
	if m.Scenarios != 2 || m.Read != 1 || m.Unread != len(Universe())-1 {
		t.Errorf("counts: %d scenarios, %d read, %d unread", m.Scenarios, m.Read, m.Unread)
	}
	if len(m.Observed) != 1 || m.Observed[0].Name != "process.exit-code" || len(m.Unknown) != 1 || m.Unknown[0].Name != "state.NODE_STATE.colour" {
		t.Errorf("observed %v, unknown %v", m.Observed, m.Unknown)
	}
	if !m.Failed() || !strings.Contains(strings.Join(m.Undocumented, " "), "request.request_state") {
		t.Errorf("undocumented unread subjects not failing the map: %v", m.Undocumented)
	}
	var b bytes.Buffer
	if err := m.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"read    state.NETWORK_RUN.status: m5-a, m5-b\n", "unread  exit.plan: no scenario runs plan\n",
		"UNREAD  request.request_state: ", "UNKNOWN state.NODE_STATE.colour", "observed process.exit-code: m5-b\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}

// Reasons are read from their section's table only; an entry that names no subject, one
// twice and one without a reason are refused.
func TestParseReasons(t *testing.T) {
	md := "# x\n\n| `exit.plan` | not this table |\n\n## Unread subjects\n\n| subject | reason |\n| --- | --- |\n" +
		"| `exit.validate` | no scenario runs validate |\n| `joblog.*` | kSQL-Flow's | own |\n\n## After\n\n| `exit.status` | no |\n"
	r, err := ParseReasons([]byte(md))
	if err != nil {
		t.Fatal(err)
	}
	if len(r) != 2 || r["exit.validate"] != "no scenario runs validate" || r["joblog.*"] != "kSQL-Flow's | own" {
		t.Errorf("reasons %v", r)
	}
	head := "## Unread subjects\n\n"
	for _, bad := range []string{"| `exit.nothing` | gone |\n", "| `exit.plan` | a |\n| `exit.plan` | b |\n", "| `exit.plan` |  |\n", "no table\n"} {
		if _, err := ParseReasons([]byte(head + bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
