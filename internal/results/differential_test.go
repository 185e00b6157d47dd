package results

import (
	"encoding/json"
	"strings"
	"testing"
)

func rawRun(runID, attemptID, at, status, host string, revision string) []RawRecord {
	return []RawRecord{
		{App: "state", Fields: map[string]string{"$id": "1" + revision, "$revision": revision, "record_type": "NETWORK_RUN",
			"run_id": runID, "network_id": "net-" + runID[4:7], "status": status, "started_at": at,
			"resolved_profile_snapshot": `{"base_url":"` + host + `","apps":{"A":"1"}}`,
			"更新日時":                      at},
			Types: map[string]string{"更新日時": "UPDATED_TIME", "$id": "__ID__", "$revision": "__REVISION__"}},
		{App: "audit", Fields: map[string]string{"$id": "7" + revision, "record_type": "NODE_ATTEMPT", "run_id": runID,
			"node_attempt_id": attemptID, "node_id": "load", "attempt_no": "1", "finished_at": at,
			"reason": `{"run":"` + runID + `","at":"` + at + `"}`}},
	}
}

func scen(id string, d *Differential) *Scenario {
	return &Scenario{ID: id, Status: StatusPassed, Differential: d}
}

func TestNormaliseHistoryIgnoresIDsTimesHostsAndOrder(t *testing.T) {
	code := 0
	pa := []Process{{Name: "flownet-run", ExitCode: &code, StdoutTail: "run 0b5c7e3a-1111-4a4a-8a8a-123456789abc started at 2026-12-05T16:00:01Z\n"}}
	pb := []Process{{Name: "flownet-run", ExitCode: &code, StdoutTail: "run 9f9f9f9f-2222-4b4b-8b8b-abcdefabcdef started at 2026-12-06T01:02:03.5Z\n"}}
	a := NormaliseHistory(rawRun("run-aaa-1", "att-aaa", "2026-12-05T16:00:01Z", "SUCCESS", "http://127.0.0.1:4100", "3"), pa,
		map[string]string{"state": "11"}, []string{"aaa"})
	b := NormaliseHistory(rawRun("run-bbb-2", "att-bbb", "2026-12-06T01:02:03Z", "SUCCESS", "http://localhost:5999", "9"), pb,
		map[string]string{"state": "22"}, []string{"bbb"})
	if d := DiffScenarios("s", scen("s", a), scen("s", b)); len(d) != 0 {
		ja, _ := json.MarshalIndent(a, "", " ")
		t.Fatalf("differences %v\n%s", d, ja)
	}
	// The reason JSON names the run: it keeps the run's placeholder.
	if got := a.Records[1].Fields["reason"]; got != `{"at":"<time>","run":"<run_id#1>"}` {
		t.Errorf("reason = %q", got)
	}
	if _, ok := a.Records[0].Fields["更新日時"]; ok {
		t.Error("a system field was kept")
	}
}

func TestNormaliseHistoryKeepsAChangedStatus(t *testing.T) {
	a := NormaliseHistory(rawRun("run-aaa-1", "att-aaa", "2026-12-05T16:00:01Z", "SUCCESS", "h", "1"), nil, nil, []string{"aaa"})
	b := NormaliseHistory(rawRun("run-bbb-2", "att-bbb", "2026-12-05T16:00:01Z", "FAILED", "h", "1"), nil, nil, []string{"bbb"})
	d := DiffScenarios("s", scen("s", a), scen("s", b))
	if len(d) != 1 || d[0].Path != "state/NETWORK_RUN[0].status" || d[0].A != "SUCCESS" || d[0].B != "FAILED" {
		t.Fatalf("differences %+v", d)
	}
}

func TestDiffScenariosCountsRecordsExitCodesAndMissingScenarios(t *testing.T) {
	zero, one := 0, 1
	a := NormaliseHistory(rawRun("run-ccc", "a1", "", "SUCCESS", "", "1"), []Process{{Name: "p", ExitCode: &zero}}, nil, nil)
	b := NormaliseHistory(rawRun("run-ccc", "a1", "", "SUCCESS", "", "1")[:1], []Process{{Name: "p", ExitCode: &one}}, nil, nil)
	paths := map[string]bool{}
	for _, d := range DiffScenarios("s", scen("s", a), scen("s", b)) {
		paths[d.Path] = true
	}
	for _, p := range []string{"audit/NODE_ATTEMPT.count", "process/p[0].exit_code"} {
		if !paths[p] {
			t.Errorf("no difference at %s: %v", p, paths)
		}
	}
	if d := DiffScenarios("s", scen("s", a), nil); len(d) != 1 || d[0].B != absent {
		t.Errorf("missing scenario: %+v", d)
	}
}

// What the real FlowNet prints beside the reference: a run id joined to its prefix by '_', a
// poller's process id in its instance id, kSQL-Flow's 12-digit digest prefix. Each is
// replaced; the words around them are still compared.
func TestNormaliseTextPrefixedIDsPIDsAndShortDigests(t *testing.T) {
	line := func(run, pid, sha, word string) []Process {
		return []Process{{Name: "p", StdoutTail: "Run netrun_" + run + " finished " + word + "\n" +
			`{"owner":"local-pid://KSQL_FLOW_TEST_x_poller/` + pid + `","sha256":"` + sha + `"}` + "\n"}}
	}
	a := NormaliseHistory(nil, line("65335acf-d36b-4f63-894a-6da475c82e0e", "23749", "16285ee49676", "ok"), nil, nil)
	b := NormaliseHistory(nil, line("88e7ac27-f25a-4f3c-8119-9ad5d70f1899", "15218", "f3f2c592b5d6", "ok"), nil, nil)
	if d := DiffScenarios("s", scen("s", a), scen("s", b)); len(d) != 0 {
		t.Fatalf("differences %+v", d)
	}
	if got := a.Processes[0].StdoutHead[1]; got != `{"owner":"local-pid://KSQL_FLOW_TEST_x_poller/<pid>","sha256":"<stdout_hex#1>"}` {
		t.Errorf("normalised line = %q", got)
	}
	c := NormaliseHistory(nil, line("88e7ac27-f25a-4f3c-8119-9ad5d70f1899", "15218", "f3f2c592b5d6", "late"), nil, nil)
	if d := DiffScenarios("s", scen("s", a), scen("s", c)); len(d) != 1 {
		t.Fatalf("a changed word: differences %+v", d)
	}
}

// force-unlock-network prints the N1 lock key it released, a hash of names that hold the
// scope; once released, no record holds it. It is replaced; the words around it are compared.
func TestNormaliseTextCanonicalKeys(t *testing.T) {
	line := func(key, word string) []Process {
		return []Process{{Name: "unlock", StdoutTail: "RELEASED: " + key + " (previous owner x, post revision 4).\n" + word + "\n"}}
	}
	a := NormaliseHistory(nil, line("N1:kOz4QzKgRzLe9ctgsdil3ndJOid6Ad3TsGa25ZScdKk", "If a Node was running"), nil, nil)
	b := NormaliseHistory(nil, line("N1:uGrVjxmvBmFCisFNU0nNY3E9TP4tCmgWEI06uEbVJ4k", "If a Node was running"), nil, nil)
	if d := DiffScenarios("s", scen("s", a), scen("s", b)); len(d) != 0 {
		t.Fatalf("differences %+v", d)
	}
	if got := a.Processes[0].StdoutHead[0]; got != "RELEASED: <canonical_key#1> (previous owner x, post revision <revision>)." {
		t.Errorf("normalised line = %q", got)
	}
	c := NormaliseHistory(nil, line("N1:uGrVjxmvBmFCisFNU0nNY3E9TP4tCmgWEI06uEbVJ4k", "Hint: resume"), nil, nil)
	if d := DiffScenarios("s", scen("s", a), scen("s", c)); len(d) != 1 {
		t.Fatalf("a changed hint: differences %+v", d)
	}
	// A key a record holds keeps that record's placeholder in the text.
	recs := []RawRecord{{App: "state", Fields: map[string]string{"record_type": "NETWORK_RUN",
		"record_key": "R1:AcvSC3qfJjTJ7Bl9T196ONpZfZtJZ_TQsk6OruCPWG0"}}}
	d := NormaliseHistory(recs, []Process{{Name: "p", StdoutTail: "run R1:AcvSC3qfJjTJ7Bl9T196ONpZfZtJZ_TQsk6OruCPWG0\n"}}, nil, nil)
	if got := d.Processes[0].StdoutHead[0]; got != "run <record_key#1>" {
		t.Errorf("a record's key in text = %q", got)
	}
}

// A status whose node_states hold one more object, or an object where the other holds null,
// differs in those lines only: the lines after them are matched again, not shifted.
func TestDiffScenariosAlignsStdoutLines(t *testing.T) {
	proc := func(lines ...string) *Differential {
		code := 0
		return &Differential{Processes: []DiffProcess{{Name: "status", ExitCode: &code, StdoutHead: lines}}}
	}
	a := proc("{", `"node_states": [`, "{", `"node_id": "n1",`, `"active_attempt": null`, "}", "],", `"resume_run": null`, "}")
	b := proc("{", `"node_states": [`, "{", `"node_id": "n1",`, `"active_attempt": {`, `"attempt_no": 1`, "}", "}", "],", `"resume_run": "r1"`, "}")
	got := map[string][2]string{}
	for _, d := range DiffScenarios("s", scen("s", a), scen("s", b)) {
		got[d.Path] = [2]string{d.A, d.B}
	}
	want := map[string][2]string{
		"process/status[0].stdout[4]":  {`"active_attempt": null`, `"active_attempt": {`},
		"process/status[0].stdout[b5]": {absent, `"attempt_no": 1`},
		"process/status[0].stdout[7]":  {`"resume_run": null`, `"resume_run": "r1"`},
	}
	// One of B's two closing braces is matched to A's; the other is the extra one.
	for _, p := range []string{"process/status[0].stdout[b6]", "process/status[0].stdout[b7]"} {
		if _, ok := got[p]; ok {
			want[p] = [2]string{absent, "}"}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("differences %v, want %v", got, want)
	}
	for p, v := range want {
		if got[p] != v {
			t.Errorf("%s = %q, want %q (all: %v)", p, got[p], v, got)
		}
	}
	// Lines only A printed, at its end, and identical outputs.
	if d := alignLines([]string{"x", "y", "z"}, []string{"x"}); len(d) != 2 || d[0] != (lineDiff{"1", "y", absent}) || d[1] != (lineDiff{"2", "z", absent}) {
		t.Errorf("lines only A printed: %+v", d)
	}
	if d := alignLines([]string{"x", "y"}, []string{"x", "y"}); len(d) != 0 {
		t.Errorf("equal outputs: %+v", d)
	}
	if d := alignLines(nil, []string{"x"}); len(d) != 1 || d[0] != (lineDiff{"b0", absent, "x"}) {
		t.Errorf("a line only B printed: %+v", d)
	}
}

// A UUID only a record's text held (a reason the archive redacts) shifts no number of the
// UUIDs processes printed: one more such record on one side leaves the printed lines equal.
func TestNormaliseStdoutUUIDsNumberedApartFromRecords(t *testing.T) {
	out := func(event string) []Process {
		return []Process{{Name: "close", StdoutTail: `{"event_id":"archive_` + event + `"}` + "\n"}}
	}
	extra := []RawRecord{{App: "audit", Fields: map[string]string{"record_type": "OPERATION_AUDIT",
		"reason": `{"note":"repair 0b5c7e3a-1111-4a4a-8a8a-123456789abc"}`}}}
	a := NormaliseHistory(nil, out("65335acf-d36b-4f63-894a-6da475c82e0e"), nil, nil)
	b := NormaliseHistory(extra, out("88e7ac27-f25a-4f3c-8119-9ad5d70f1899"), nil, nil)
	if got := b.Processes[0].StdoutHead[0]; got != `{"event_id":"archive_<stdout_uuid#1>"}` {
		t.Errorf("printed line = %q", got)
	}
	for _, d := range DiffScenarios("s", scen("s", a), scen("s", b)) {
		if strings.HasPrefix(d.Path, "process/") {
			t.Errorf("printed lines differ: %+v", d)
		}
	}
	// A UUID a record held and a process printed keeps the record's placeholder.
	c := NormaliseHistory(extra, out("0b5c7e3a-1111-4a4a-8a8a-123456789abc"), nil, nil)
	if got := c.Processes[0].StdoutHead[0]; got != `{"event_id":"archive_<uuid#1>"}` {
		t.Errorf("a record's UUID printed = %q", got)
	}
}

// A status prints the Network lock's business revision: how many lease writes landed before
// the read is the timing of one run. Its number is replaced, in the JSON and in the text
// form; a number under a key that is no id (attempt_no) is still compared.
func TestNormaliseStdoutIDNumbers(t *testing.T) {
	out := func(rev, no string) []Process {
		return []Process{{Name: "status", StdoutTail: `"lock": {` + "\n" + `  "revision": ` + rev + "\n" + "  revision: " + rev + "\n" +
			`  "attempt_no": ` + no + ",\n"}}
	}
	a := NormaliseHistory(nil, out("3", "1"), nil, nil)
	b := NormaliseHistory(nil, out("4", "1"), nil, nil)
	if d := DiffScenarios("s", scen("s", a), scen("s", b)); len(d) != 0 {
		t.Fatalf("differences %+v", d)
	}
	if got := a.Processes[0].StdoutHead; got[1] != `"revision": <revision>` || got[2] != "revision: <revision>" {
		t.Errorf("normalised lines = %q", got)
	}
	c := NormaliseHistory(nil, out("4", "2"), nil, nil)
	if d := DiffScenarios("s", scen("s", a), scen("s", c)); len(d) != 1 || d[0].A != `"attempt_no": 1,` {
		t.Fatalf("a changed attempt_no: differences %+v", d)
	}
}

// An evidence reference into the run's own archive (a file URL of the scenario's record)
// names the archive directory, which differs per run; the scenario file and fragment after it
// are still compared.
func TestNormaliseTextArchiveEvidenceRef(t *testing.T) {
	rec := func(dir, frag string) []RawRecord {
		ref := "file://" + dir + "/scenarios/m6-03.json"
		return []RawRecord{{App: "audit", Fields: map[string]string{"record_type": "ATTEMPT_RESOLUTION", "evidence_ref": ref,
			"reason": `{"stop_evidence_ref":"` + ref + frag + `"}`}}}
	}
	a := NormaliseHistory(rec("/tmp/ref2/2026-12-05/183324-all", "#stop"), nil, nil, nil)
	b := NormaliseHistory(rec("/tmp/real2/2026-12-05/182920-all", "#stop"), nil, nil, nil)
	if d := DiffScenarios("s", scen("s", a), scen("s", b)); len(d) != 0 {
		t.Fatalf("differences %+v", d)
	}
	if got := a.Records[0].Fields["evidence_ref"]; got != "file://<archive>/scenarios/m6-03.json" {
		t.Errorf("evidence_ref = %q", got)
	}
	c := NormaliseHistory(rec("/tmp/real2/2026-12-05/182920-all", "#other"), nil, nil, nil)
	if d := DiffScenarios("s", scen("s", a), scen("s", c)); len(d) != 1 {
		t.Fatalf("a changed fragment: differences %+v", d)
	}
}

// A canonical Network lock key in an audit's JSON hashes the network id, which holds the
// scenario's scope: it is numbered like an id.
func TestNormaliseTextCanonicalLockKey(t *testing.T) {
	rec := func(key string) []RawRecord {
		return []RawRecord{{App: "audit", Fields: map[string]string{"record_type": "OPERATION_AUDIT",
			"reason": `{"lock_key":"` + key + `","profile":"e2e"}`}}}
	}
	a := NormaliseHistory(rec("N1:2X9MwTRAjWX3C51YS9VqNxTjtcvor8ayQk6Phk5Oa4s"), nil, nil, nil)
	b := NormaliseHistory(rec("N1:3fXSiSGbOpeW5ZPJ7s1CvQV4e3qt3dahli6_5txk7xQ"), nil, nil, nil)
	if d := DiffScenarios("s", scen("s", a), scen("s", b)); len(d) != 0 {
		t.Fatalf("differences %+v", d)
	}
	if got := a.Records[0].Fields["reason"]; got != `{"lock_key":"<canonical_key#1>","profile":"e2e"}` {
		t.Errorf("reason = %q", got)
	}
}

// The requester of a request-app START names the request record's $id, a record id of one
// run: it is numbered in first-seen order, the creator after it is still compared.
func TestNormaliseTextAppRequestRecordID(t *testing.T) {
	rec := func(id, who string) []RawRecord {
		return []RawRecord{{App: "audit", Fields: map[string]string{"record_type": "RUN_INVOCATION",
			"requested_by": "app-request:" + id + ":" + who}}}
	}
	a := NormaliseHistory(rec("3", "Administrator"), nil, nil, nil)
	b := NormaliseHistory(rec("4", "Administrator"), nil, nil, nil)
	if d := DiffScenarios("s", scen("s", a), scen("s", b)); len(d) != 0 {
		t.Fatalf("differences %+v", d)
	}
	if got := a.Records[0].Fields["requested_by"]; got != "app-request:<request_id#1>:Administrator" {
		t.Errorf("requested_by = %q", got)
	}
	// Seen twice in one scenario, it keeps its placeholder.
	two := NormaliseHistory(append(rec("3", "x"), rec("3", "y")...), nil, nil, nil)
	if got := two.Records[1].Fields["requested_by"]; got != "app-request:<request_id#1>:y" {
		t.Errorf("second requested_by = %q", got)
	}
	c := NormaliseHistory(rec("4", "someone"), nil, nil, nil)
	if d := DiffScenarios("s", scen("s", a), scen("s", c)); len(d) != 1 {
		t.Fatalf("another creator: differences %+v", d)
	}
}

// A Network lock's business revision and force-unlock's "post revision" count heartbeats
// (timing): replaced, and they shift no number a Node State's revision is given; Node
// States' revisions are still compared (numbered, like ids).
func TestNormaliseLockRevisionsAreTiming(t *testing.T) {
	hist := func(lockRev, unlockRev, nodeRev string) *Differential {
		recs := []RawRecord{
			{App: "state", Fields: map[string]string{"record_type": "NETWORK_LOCK", "revision": lockRev}},
			{App: "state", Fields: map[string]string{"record_type": "NODE_STATE", "revision": nodeRev}},
		}
		return NormaliseHistory(recs, []Process{{Name: "unlock", StdoutTail: "RELEASED: k (previous owner o, post revision " + unlockRev + ").\n"}}, nil, nil)
	}
	a, b := hist("3", "4", "3"), hist("7", "5", "3")
	if d := DiffScenarios("s", scen("s", a), scen("s", b)); len(d) != 0 {
		t.Fatalf("differences %+v", d)
	}
	// force-unlock's audit holds the same $revision in its JSON.
	audit := func(rev string) *Differential {
		return NormaliseHistory([]RawRecord{{App: "audit", Fields: map[string]string{"record_type": "OPERATION_AUDIT",
			"reason": `{"event_type":"NETWORK_LOCK_FORCE_RELEASED","post_release_revision":` + rev + `}`}}}, nil, nil, nil)
	}
	if d := DiffScenarios("s", scen("s", audit("4")), scen("s", audit("5"))); len(d) != 0 {
		t.Errorf("post_release_revision: differences %+v", d)
	}
	if got := a.Records[0].Fields["revision"]; got != "<lock_revision>" {
		t.Errorf("lock revision = %q", got)
	}
	// Revisions are numbered like ids: two Node States at one revision against two at
	// different ones is still a difference.
	two := func(r1, r2 string) *Differential {
		return NormaliseHistory([]RawRecord{
			{App: "state", Fields: map[string]string{"record_type": "NETWORK_LOCK", "revision": r1 + "9"}},
			{App: "state", Fields: map[string]string{"record_type": "NODE_STATE", "revision": r1}},
			{App: "state", Fields: map[string]string{"record_type": "NODE_STATE", "revision": r2}},
		}, nil, nil, nil)
	}
	if d := DiffScenarios("s", scen("s", two("3", "3")), scen("s", two("3", "4"))); len(d) != 1 {
		t.Errorf("Node States' revisions: differences %+v", d)
	}
}
