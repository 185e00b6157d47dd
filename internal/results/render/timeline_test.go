package render

import (
	"encoding/json"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata")

func intp(i int) *int { return &i }

// svgShape is one drawn rect or path of a timeline, with its class and <title>.
type svgShape struct {
	class, title string
	x, w         float64
}

func svgShapes(t *testing.T, svg string) (shapes []svgShape, texts []string) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svg))
	var cur *svgShape
	inTitle, inText := false, false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "the SVG is well-formed XML")
		switch el := tok.(type) {
		case xml.StartElement:
			switch el.Name.Local {
			case "rect", "path":
				sh := svgShape{}
				for _, a := range el.Attr {
					switch a.Name.Local {
					case "class":
						sh.class = a.Value
					case "x":
						sh.x, _ = strconv.ParseFloat(a.Value, 64)
					case "width":
						sh.w, _ = strconv.ParseFloat(a.Value, 64)
					case "d":
						// M<x> <y> …: a point mark
						f := strings.Fields(strings.TrimPrefix(a.Value, "M"))
						sh.x, _ = strconv.ParseFloat(f[0], 64)
					}
				}
				shapes = append(shapes, sh)
				cur = &shapes[len(shapes)-1]
			case "title":
				inTitle = true
			case "text":
				inText = true
			}
		case xml.EndElement:
			switch el.Name.Local {
			case "title":
				inTitle = false
			case "text":
				inText = false
			case "rect", "path":
				cur = nil
			}
		case xml.CharData:
			if inTitle && cur != nil {
				cur.title += string(el)
			} else if inText {
				texts = append(texts, string(el))
			}
		}
	}
	return shapes, texts
}

// The timeline of a recorded scenario (p2-16-05 on the sandbox: two run-network processes,
// a node attempt in each, two barriers named in the feature): golden, and what the golden
// must show, checked on its geometry so that a golden rewritten with -update cannot hide it.
func TestTimelineOfARecordedScenario(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "timeline", "p2-16-05-close-rerun-race.json"))
	require.NoError(t, err)
	var s record.Scenario
	require.NoError(t, json.Unmarshal(data, &s))
	svg := timelineSVG(&s)

	golden := filepath.Join("testdata", "timeline", "p2-16-05-close-rerun-race.svg")
	if *updateGolden {
		require.NoError(t, os.WriteFile(golden, []byte(svg), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "no golden file: go test ./results -run TestTimelineOfARecordedScenario -update")
	assert.Equal(t, string(want), svg, "the timeline changed: look at it, then rewrite the golden with -update")

	shapes, texts := svgShapes(t, svg)
	procs := map[string]svgShape{}
	var attempts []svgShape
	for _, sh := range shapes {
		if sh.class == "" {
			continue // background and lane stripes
		}
		// Every bar says its exact extent and where its times come from.
		assert.Contains(t, sh.title, "UTC", sh.class)
		assert.Contains(t, sh.title, "source: ", sh.class)
		switch sh.class {
		case "tl-process":
			name, _, _ := strings.Cut(strings.TrimPrefix(sh.title, "process "), ":")
			procs[name] = sh
		case "tl-attempt":
			attempts = append(attempts, sh)
		}
	}
	require.Len(t, attempts, 2)
	for i, a := range attempts {
		_, after, ok := strings.Cut(a.title, "the lifetime of process ")
		require.True(t, ok, "attempt %d is related to a process: %s", i, a.title)
		name, _, _ := strings.Cut(after, ";")
		p, ok := procs[name]
		require.True(t, ok, "process %q is drawn", name)
		// Inside its process's bar (the SVG rounds to 0.1 px; a bar is at least 2 px wide).
		assert.GreaterOrEqual(t, a.x, p.x-0.05, "attempt %d starts within %s", i, name)
		assert.LessOrEqual(t, a.x+a.w, max(p.x+p.w, p.x+2)+0.05, "attempt %d ends within %s", i, name)
		assert.Contains(t, a.title, "started_at 2026-12-01 23:24 UTC (minute)", "its DATETIMEs as the minutes they are")
	}
	assert.Contains(t, attempts[0].title, "process first-run;", "attempt 1 ran in the first run")
	assert.Contains(t, attempts[1].title, "process resumed-run;", "attempt 2 in the resumed run")
	// Lanes: the setup band labelled; barriers by the feature's names and their process.
	assert.Contains(t, texts, "setup")
	assert.Contains(t, texts, "barrier heartbeat_after — resumed run")
	found := false
	for _, tx := range texts {
		if strings.HasPrefix(tx, "barrier long read — ") {
			found = true
		}
		assert.NotContains(t, tx, "KSQL_FLOW_TEST_", "no lane is labelled by a scope-prefixed id")
	}
	assert.True(t, found, "barrier long read has its lane: %v", texts)
}

// The rule relating attempts to processes, on the cases it decides (attempts.go).
func TestAttemptProcesses(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 23, 14, 35, 0, time.UTC)
	minute := t0.Truncate(time.Minute)
	proc := func(name, cmd string, start time.Duration, ms int64) record.Process {
		return record.Process{Name: name, Argv: []string{"flowsandbox", "flownet", cmd}, ExitCode: intp(1), Start: t0.Add(start), DurationMS: ms}
	}
	att := func(node string, no int, inv string) record.Attempt {
		return record.Attempt{Node: node, AttemptNo: no, InvocationID: inv, StartedAt: minute, FinishedAt: minute, DurationSec: 0.03}
	}
	// m5-resume: the first run ran n1#1 and n2#1 (one invocation), the resume n2#2; an
	// archive-run between them runs no node.
	s := &record.Scenario{Start: t0, End: t0.Add(2 * time.Second),
		Processes: []record.Process{proc("first", "run-network", 100*time.Millisecond, 700), proc("archive", "archive-run", 850*time.Millisecond, 20), proc("resume", "run-network", 900*time.Millisecond, 100)},
		Attempts:  []record.Attempt{att("n1", 1, "A"), att("n2", 1, "A"), att("n2", 2, "B")}}
	assert.Equal(t, []int{0, 0, 2}, attemptProcesses(s))
	// Listed out of order, the attempt numbers still order the invocations.
	s.Attempts = []record.Attempt{att("n2", 2, "B"), att("n1", 1, "A"), att("n2", 1, "A")}
	assert.Equal(t, []int{2, 0, 0}, attemptProcesses(s))
	// Drawn inside the process, never longer than it ran.
	from, to, src := attemptWindow(s, s.Attempts[0], 2)
	assert.Equal(t, srcKintoneMinute, src)
	assert.Equal(t, s.Processes[2].Start, from)
	assert.Equal(t, s.Processes[2].Start.Add(100*time.Millisecond), to)
	// A process in another minute does not qualify: no process, the scenario bounds it.
	s.Attempts = []record.Attempt{{Node: "n1", AttemptNo: 1, InvocationID: "C", StartedAt: minute.Add(-time.Hour), FinishedAt: minute.Add(-time.Hour)}}
	assert.Equal(t, []int{-1}, attemptProcesses(s))
	from, to, _ = attemptWindow(s, s.Attempts[0], -1)
	assert.Equal(t, []time.Time{s.Start, s.End}, []time.Time{from, to}, "no overlap at all: the scenario's lifetime")
	s.Attempts[0].StartedAt, s.Attempts[0].FinishedAt = minute, minute
	from, to, _ = attemptWindow(s, s.Attempts[0], -1)
	assert.Equal(t, []time.Time{s.Start, s.End}, []time.Time{from, to}, "its minute cut to the scenario")
	// Times with seconds are exact: drawn as they are.
	s.Attempts[0].StartedAt, s.Attempts[0].FinishedAt = t0.Add(150*time.Millisecond), t0.Add(400*time.Millisecond)
	from, to, src = attemptWindow(s, s.Attempts[0], 0)
	assert.Equal(t, srcKintoneExact, src)
	assert.Equal(t, []time.Time{t0.Add(150 * time.Millisecond), t0.Add(400 * time.Millisecond)}, []time.Time{from, to})
}

// attemptRecord is a recorded scenario (JSON, as the archive keeps it) whose two attempts ran
// in one run-network within one minute: n1's with its Execution Result times, n2's with
// kintone's minutes only.
const attemptRecord = `{"schema_version":1,"id":"m5-two-nodes","status":"passed",
 "start":"2026-12-06T10:00:00Z","end":"2026-12-06T10:00:02Z","duration_ms":2000,
 "steps":[],"assertions":[],"barriers":[],"waits":[],"traffic":{},"cleanup":{"ok":true,"actions":[]},
 "processes":[{"name":"run","argv":["flowsandbox","flownet","run-network"],"exit_code":0,"start":"2026-12-06T10:00:00.100Z","duration_ms":1800,"stdout_tail":"","stderr_tail":""}],
 "attempts":[
  {"node":"n1","attempt_no":1,"status":"SUCCESS","result_code":"OK","invocation_id":"i1","started_at":"2026-12-06T10:00:00Z","finished_at":"2026-12-06T10:00:00Z","duration_sec":0.25,
   "result":{"started_at":"2026-12-06T10:00:00.500Z","finished_at":"2026-12-06T10:00:00.750Z","duration_ms":250}},
  {"node":"n2","attempt_no":1,"status":"SUCCESS","result_code":"OK","invocation_id":"i1","started_at":"2026-12-06T10:00:00Z","finished_at":"2026-12-06T10:00:00Z","duration_sec":0.3}
 ]}`

// Node attempts are drawn at kSQL-Flow's result times where the record has them (solid, to
// the millisecond) and over their kintone minute cut to their process only where nothing
// finer exists (dashed); the page says which source each timeline used.
func TestAttemptsDrawnAtResultTimes(t *testing.T) {
	var s record.Scenario
	require.NoError(t, json.Unmarshal([]byte(attemptRecord), &s))
	require.NotNil(t, s.Attempts[0].Result, "the record keeps the result times")

	from, to, src := attemptWindow(&s, s.Attempts[0], 0)
	assert.Equal(t, srcResult, src)
	assert.Equal(t, []time.Time{time.Date(2026, 12, 6, 10, 0, 0, 500_000_000, time.UTC), time.Date(2026, 12, 6, 10, 0, 0, 750_000_000, time.UTC)}, []time.Time{from, to})
	from, to, src = attemptWindow(&s, s.Attempts[1], 0)
	assert.Equal(t, srcKintoneMinute, src)
	assert.Equal(t, []time.Time{s.Processes[0].Start, s.Processes[0].Start.Add(1800 * time.Millisecond)}, []time.Time{from, to}, "the minute cut to the process")

	shapes, _ := svgShapes(t, timelineSVG(&s))
	var bars []svgShape
	for _, sh := range shapes {
		if sh.class == "tl-attempt" {
			bars = append(bars, sh)
		}
	}
	require.Len(t, bars, 2)
	// The axis runs 0–2 s over 754 px from x = 230: 0.5–0.75 s is 188.5 px on, 94.3 wide.
	assert.InDelta(t, 230+754*0.25, bars[0].x, 0.1)
	assert.InDelta(t, 754*0.125, bars[0].w, 0.1)
	assert.Contains(t, bars[0].title, "source: kSQL-Flow's Execution Result startedAt/finishedAt (ms")
	assert.Contains(t, bars[1].title, "(kintone DATETIME keeps minutes)")
	svg := timelineSVG(&s)
	assert.Equal(t, 1, strings.Count(svg, "stroke-dasharray"), "only the minute-bound attempt is dashed")

	run := &record.Run{Start: s.Start, End: s.End, Scenarios: []record.ScenarioSummary{{ID: s.ID, Status: s.Status}}}
	page, err := Index(NewView(run, []*record.Scenario{&s}, nil))
	require.NoError(t, err)
	assert.Contains(t, string(page), "<p class=\"lim\">Node attempt times: 1 from kSQL-Flow result (ms), 1 from kintone (minute); a dashed bar")
	s.Attempts[1].Result = &record.AttemptResult{StartedAt: from, FinishedAt: to, DurationMS: 300}
	assert.Equal(t, "Node attempt times: 2 from kSQL-Flow result (ms)", attemptTimesText(&s))
}
