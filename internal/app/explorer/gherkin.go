package explorer

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/schedule"
)

// A violating schedule as a scenario of the suite: the explored scenario's own steps, with
// the step that starts the explored processes replaced by the same starts behind fault-proxy
// barriers that force the schedule's order of kintone writes.
//
// The order is forced stretch by stretch (a stretch: writes of one process released one
// after the other). Each process is held, by a one-shot "before it is sent" barrier, at the
// first write of each of its stretches; such a hold point's barrier is installed while the
// process is held at its previous one (before it starts, for its first), so it catches the
// process's next write that matches it: the method, the app and one field the write carries
// and none of the process's writes in between carries (when no field tells them apart, each
// write in between becomes a hold point too). A stretch ends when its process is held at its
// next hold point, or has exited: only then is the next stretch's process released.
//
// What it cannot force: a process's requests that are no scheduled writes (reads, a timer's
// heartbeat) run as they come, as they did under the scheduler; a schedule's writes are
// taken to go to the single-record endpoint (record.json), the only one FlowNet writes
// through (product-contract §9). The generator replaces the scenario's start steps: either
// `pollers "A" and "B" run at the same time`, by `the poller starts as` each (that step
// waits for both to exit, which held pollers never would), or a run of consecutive start
// steps, one per explored party, each `the poller starts as "X"` (or `runs as`, which
// waits: it becomes `starts as`) or the start of a background party (backgroundParties),
// among which barrier steps on the explored processes are dropped (a barrier on an explored
// process installs nothing under the scheduler: the schedule was run without it).
//
// A background party is no FlowNet process: it sends one write when its step runs, through
// a proxy its step makes, so no barrier can hold it. The generator orders it by placing its
// start step where its write comes in the schedule, after every started process has reached
// its next hold point (the scheduler released it only once every process was held), and
// waits for its answer before the next stretch. A scenario whose explored parties start
// otherwise gets no generated scenario, and the report says so.

// GherkinSource is what the generator needs of the explored scenario.
type GherkinSource struct {
	ID, Series string
	// Needs are the manifest entry's needs; the generated entry adds fault-proxy.
	Needs     []string
	Processes []string
	// FeatureText is the feature file, Path its path inside the features directory (slash
	// separated); ScenarioLine the line (1-based) of its Scenario.
	FeatureText  string
	Path         string
	ScenarioLine int
}

var (
	stepLine      = regexp.MustCompile(`^\s*(Given|When|Then|And|But|\*)\s+(.*?)\s*$`)
	runTogetherRE = regexp.MustCompile(`^pollers "([^"]+)" and "([^"]+)" run at the same time$`)
	pollerStartRE = regexp.MustCompile(`^the poller (?:starts|runs) as "([^"]+)"$`)
	// A barrier on an explored process installs nothing under the scheduler (its reached and
	// released steps pass): among the start steps, the generator drops it with its steps.
	exploredBarrierRE = regexp.MustCompile(`^barrier "([^"]+)" in the fault proxy of "([^"]+)" holds `)
	barrierStepRE     = regexp.MustCompile(`^barrier "([^"]+)" is (?:reached|released)$`)
	scenarioHeadRE    = regexp.MustCompile(`^\s*(Scenario|Scenario Outline|Scenario Template|Example|Examples|Rule|Background|Feature)\s*:|^\s*@`)
)

// backgroundParties are the start steps of the explored parties that are no FlowNet
// process (internal/steps/requests/requester.go), each with the step that waits for the party's answer.
var backgroundParties = []struct {
	start *regexp.Regexp
	wait  string
}{
	{regexp.MustCompile(`^the requester cancels .+ on the request board in the background as "([^"]+)", .+$`), `the requester's cancel was answered 200 or 409`},
}

// startStep is one explored party's start in the generated scenario.
type startStep struct {
	name string
	// step is a background party's own start step (without keyword), wait its answer
	// step; both empty for a FlowNet process, started by `the poller starts as`.
	step, wait string
}

// startBlock finds the scenario's start steps of the explored parties: the index of the
// first line, the index after the last, and the starts in order.
func startBlock(src GherkinSource, lines []string) (first, end int, starts []startStep, indent string, err error) {
	for i, l := range lines {
		m := stepLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		indent = l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if p := runTogetherRE.FindStringSubmatch(m[2]); p != nil && sameSet([]string{p[1], p[2]}, src.Processes) {
			return i, i + 1, []startStep{{name: p[1]}, {name: p[2]}}, indent, nil
		}
		var names []string
		var block []startStep
		barriers := map[string]bool{} // the block's barriers on explored processes
		j := i
		for ; j < len(lines); j++ {
			m := stepLine.FindStringSubmatch(lines[j])
			if m == nil {
				break
			}
			if b := exploredBarrierRE.FindStringSubmatch(m[2]); b != nil && slices.Contains(src.Processes, b[2]) {
				barriers[b[1]] = true
				continue
			}
			if b := barrierStepRE.FindStringSubmatch(m[2]); b != nil && barriers[b[1]] {
				continue
			}
			st, ok := partyStart(m[2])
			if !ok || !slices.Contains(src.Processes, st.name) {
				break
			}
			block = append(block, st)
			names = append(names, st.name)
		}
		if len(block) > 0 && sameSet(names, src.Processes) {
			return i, j, block, indent, nil
		}
	}
	return 0, 0, nil, "", fmt.Errorf("no step of %s starts %s with `pollers \"…\" and \"…\" run at the same time`, nor do consecutive start steps (`the poller starts as \"…\"` or `runs as \"…\"`, a background party's start, among barrier steps on them) start each of them: the start steps the generator can replace by starts that do not wait", src.ID, strings.Join(quoted(src.Processes), " and "))
}

// partyStart reads one start step of a party.
func partyStart(text string) (startStep, bool) {
	if p := pollerStartRE.FindStringSubmatch(text); p != nil {
		return startStep{name: p[1]}, true
	}
	for _, bp := range backgroundParties {
		if p := bp.start.FindStringSubmatch(text); p != nil {
			return startStep{name: p[1], step: text, wait: bp.wait}, true
		}
	}
	return startStep{}, false
}

// scenarioLines are the lines of the scenario at line (1-based) after its Scenario line,
// up to the next scenario, tag line or the end, without trailing blank or comment lines.
func scenarioLines(text string, line int) ([]string, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if line < 1 || line > len(lines) || !strings.Contains(lines[line-1], "Scenario") {
		return nil, fmt.Errorf("line %d of the feature file is not its Scenario", line)
	}
	var out []string
	for _, l := range lines[line:] {
		if scenarioHeadRE.MatchString(l) {
			break
		}
		out = append(out, l)
	}
	for len(out) > 0 {
		t := strings.TrimSpace(out[len(out)-1])
		if t != "" && !strings.HasPrefix(t, "#") {
			break
		}
		out = out[:len(out)-1]
	}
	return out, nil
}

// holdPoints are, per process, the indexes into order of the writes held at a barrier, each
// with the field its barrier matches ("" : the write carries none).
type holdPoint struct {
	at    int
	field string
}

func holdPoints(order []schedule.Signature, process string) []holdPoint {
	var mine []int
	for i, s := range order {
		if s.Process == process {
			mine = append(mine, i)
		}
	}
	// First writes of the process's stretches.
	var want []int
	for k, i := range mine {
		if k == 0 || order[i-1].Process != process {
			want = append(want, i)
		}
	}
	var out []holdPoint
	prev := -1 // index into mine of the last hold point
	for _, w := range want {
		k := slices.Index(mine, w)
		between := mine[prev+1 : k]
		if f, ok := distinguishing(order, process, w, between); ok {
			out = append(out, holdPoint{w, f})
			prev = k
			continue
		}
		// Nothing tells this write from one before it: hold each of them in turn (each is
		// then the process's very next write when its barrier goes in).
		for _, b := range append(slices.Clone(between), w) {
			f, _ := distinguishing(order, process, b, nil)
			out = append(out, holdPoint{b, f})
		}
		prev = k
	}
	return out
}

// distinguishing picks a field of write w that none of the writes between (of the same
// method and app) carries, preferring one no other write signature of the process carries
// at all, and a heartbeat's field (…heartbeat_at) last: a timer's write may come anywhere,
// also where the explored run had none.
func distinguishing(order []schedule.Signature, process string, w int, between []int) (string, bool) {
	s := order[w]
	same := func(o schedule.Signature) bool { return o.Method == s.Method && o.Role == s.Role }
	carries := func(o schedule.Signature, f string) bool { return slices.Contains(o.Fields, f) }
	if len(s.Fields) == 0 {
		for _, b := range between {
			if same(order[b]) {
				return "", false
			}
		}
		return "", true
	}
	fields := slices.Clone(s.Fields)
	slices.SortStableFunc(fields, func(a, b string) int {
		ha, hb := strings.HasSuffix(a, "heartbeat_at"), strings.HasSuffix(b, "heartbeat_at")
		switch {
		case ha == hb:
			return 0
		case hb:
			return -1
		}
		return 1
	})
	var fallback string
	for _, f := range fields {
		clash := false
		for _, b := range between {
			if same(order[b]) && carries(order[b], f) {
				clash = true
				break
			}
		}
		if clash {
			continue
		}
		unique := true
		for _, o := range order {
			if o.Process == process && same(o) && o.String() != s.String() && carries(o, f) {
				unique = false
				break
			}
		}
		if unique {
			return f, true
		}
		if fallback == "" {
			fallback = f
		}
	}
	return fallback, fallback != ""
}

// Gherkin renders a scenario whose barriers force order (the schedule numbered n, which
// failed as failure), or says why it cannot.
func Gherkin(src GherkinSource, n int, failure string, order []schedule.Signature) (string, error) {
	lines, err := scenarioLines(src.FeatureText, src.ScenarioLine)
	if err != nil {
		return "", err
	}
	start, end, starts, indent, err := startBlock(src, lines)
	if err != nil {
		return "", err
	}
	background, err := checkOrder(src, order, starts)
	if err != nil {
		return "", err
	}
	w := &forcedWriter{indent: indent, order: order, background: background,
		holds: map[string][]holdPoint{}, next: map[string]int{}, reached: map[string]bool{}}
	w.header(src, n, failure)
	for _, l := range lines[:start] {
		w.b.WriteString(l + "\n")
	}
	w.startProcesses(starts, lines[:start])
	w.allHeld()
	for i := 0; i < len(order); {
		i = w.playRun(i)
	}
	for _, l := range lines[end:] {
		w.b.WriteString(l + "\n")
	}
	return w.b.String(), nil
}

// checkOrder refuses a schedule that released no write, a write of a process the scenario
// does not explore, and a background party with other than one write; it returns the
// background parties by name.
func checkOrder(src GherkinSource, order []schedule.Signature, starts []startStep) (map[string]startStep, error) {
	if len(order) == 0 {
		return nil, errors.New("the schedule released no write")
	}
	for _, s := range order {
		if !slices.Contains(src.Processes, s.Process) {
			return nil, fmt.Errorf("write %s is of a process the scenario does not explore", s)
		}
	}
	background := map[string]startStep{}
	for _, st := range starts {
		if st.step == "" {
			continue
		}
		background[st.name] = st
		if n := countOf(order, st.name); n != 1 {
			return nil, fmt.Errorf("background party %q released %d writes: the generator orders a background party by its one write", st.name, n)
		}
	}
	return background, nil
}

// forcedWriter writes the steps of a scenario that forces the writes of order with
// barriers, tracking each FlowNet process's hold points.
type forcedWriter struct {
	b          strings.Builder
	indent     string
	order      []schedule.Signature
	background map[string]startStep   // background parties by name
	processes  []string               // the FlowNet processes, in start order
	holds      map[string][]holdPoint // per process
	next       map[string]int         // per process: its next hold point
	reached    map[string]bool        // barriers already awaited
}

// line writes one step at the scenario's indent.
func (w *forcedWriter) line(format string, a ...any) {
	w.b.WriteString(w.indent + fmt.Sprintf(format, a...) + "\n")
}

func barrierName(p string, at int) string { return fmt.Sprintf("%s write %d", p, at+1) }

// install writes the step that sets process p's barrier at hold point h.
func (w *forcedWriter) install(p string, h holdPoint) {
	s := w.order[h.at]
	carries := ""
	if h.field != "" {
		carries = fmt.Sprintf(" when it carries %q", h.field)
	}
	w.line("And barrier %q in the fault proxy of %q holds the %s of record in the %s app before it is sent%s", barrierName(p, h.at), p, s.Method, s.Role, carries)
}

// header writes the comment that says where the scenario goes, its tags and its title.
func (w *forcedWriter) header(src GherkinSource, n int, failure string) {
	j := joiningOf(src, n)
	fmt.Fprintf(&w.b, "  # Generated by `flowtest explore %s`: schedule %d (%s), its %d kintone writes forced in\n", src.ID, n, failure, len(w.order))
	fmt.Fprintf(&w.b, "  # order by fault-proxy barriers. Append it to %s and add to features/manifest.yaml,\n", j.featureName())
	fmt.Fprintf(&w.b, "  # after %s's entry:\n", src.ID)
	fmt.Fprintf(&w.b, "  #   %s\n", j.Entry)
	fmt.Fprintf(&w.b, "  @%s @%s\n", j.ID, src.Series)
	fmt.Fprintf(&w.b, "  Scenario: %s — schedule %d of flowtest explore, forced by barriers\n", src.ID, n)
}

// startProcesses routes every FlowNet process through a fault proxy (unless before, the
// scenario's steps before its starts, says so already), installs each one's first barrier
// and starts them.
func (w *forcedWriter) startProcesses(starts []startStep, before []string) {
	for _, st := range starts {
		if st.step == "" {
			w.processes = append(w.processes, st.name)
		}
	}
	for _, p := range w.processes {
		w.holds[p] = holdPoints(w.order, p)
		declared := fmt.Sprintf("the kintone traffic of %q goes through a fault proxy", p)
		if !slices.ContainsFunc(before, func(l string) bool { return strings.HasSuffix(strings.TrimSpace(l), declared) }) {
			w.line("And %s", declared)
		}
	}
	for _, p := range w.processes {
		if hs := w.holds[p]; len(hs) > 0 {
			w.install(p, hs[0])
		}
	}
	for i, p := range w.processes {
		kw := "And"
		if i == 0 {
			kw = "When"
		}
		w.line("%s the poller starts as %q", kw, p)
	}
}

// allHeld waits for every started process at its next hold point, as the scheduler
// waited for every process held before its first release (else a poller slow to read
// might read after the other's claim) and before a background party's write.
func (w *forcedWriter) allHeld() {
	for _, q := range w.processes {
		if hs := w.holds[q]; w.next[q] < len(hs) {
			if name := barrierName(q, hs[w.next[q]].at); !w.reached[name] {
				w.line("And barrier %q is reached", name)
				w.reached[name] = true
			}
		}
	}
}

// playRun writes the steps that let the run of writes of one process starting at order[i]
// through, and returns the index after the run.
func (w *forcedWriter) playRun(i int) int {
	p := w.order[i].Process
	j := i
	for j < len(w.order) && w.order[j].Process == p {
		j++
	}
	if bp, ok := w.background[p]; ok {
		w.allHeld() // the scheduler released it with every process held
		w.line("And %s", bp.step)
		w.line("And %s", bp.wait)
		return j
	}
	hs := w.holds[p]
	for w.next[p] < len(hs) && hs[w.next[p]].at < j {
		h := hs[w.next[p]]
		if name := barrierName(p, h.at); !w.reached[name] {
			w.line("And barrier %q is reached", name)
		}
		w.next[p]++
		if w.next[p] < len(hs) {
			w.install(p, hs[w.next[p]])
		}
		w.line("And barrier %q is released", barrierName(p, h.at))
	}
	if w.next[p] < len(hs) {
		name := barrierName(p, hs[w.next[p]].at)
		w.line("And barrier %q is reached", name)
		w.reached[name] = true
	} else {
		w.line("And %q exits with code 0", p)
	}
	return j
}

func countOf(order []schedule.Signature, process string) int {
	n := 0
	for _, s := range order {
		if s.Process == process {
			n++
		}
	}
	return n
}

func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}
