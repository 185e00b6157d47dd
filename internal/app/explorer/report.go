package explorer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/schedule"
)

// ReplayFile is schedules/<n>.json: the order `flowtest explore <id> --replay <file>` forces.
type ReplayFile struct {
	Scenario string               `json:"scenario"`
	Replay   []schedule.Signature `json:"replay"`
	// Failure is what the schedule showed (an invariant, or the scenario's failure).
	Failure string `json:"failure"`
	Reason  string `json:"reason,omitempty"`
	Command string `json:"command,omitempty"`
}

// LoadReplay reads a replay file.
func LoadReplay(path string) (ReplayFile, error) {
	var f ReplayFile
	data, err := os.ReadFile(path)
	if err != nil {
		return f, fmt.Errorf("replay file: %w", err)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return f, fmt.Errorf("replay file %s: %w", path, err)
	}
	if f.Scenario == "" || len(f.Replay) == 0 {
		return f, fmt.Errorf("replay file %s names no scenario or no releases", path)
	}
	return f, nil
}

// FileWriter is where Write puts its files: internal/results' Writer over the exploration's
// folder, which redacts every file with the run's secrets (JSON by flowtest's own keys,
// where "reason" is a failure) and writes it whole, with the archive's file mode. A failure or
// a step's text may quote a process's output, so no file may go around it.
type FileWriter interface {
	WriteFile(name string, data []byte) error // name relative to the folder, '/'-separated
}

// Write puts explore.json and one schedules/<n>.json per violation into dir, fills in each
// violation's file and replay command, and, given the scenario's source, writes beside the
// replay file of each shrunk violation the scenario whose barriers force it
// (schedules/<n>.feature), or notes why it cannot. dir is w's folder, for the replay commands.
func Write(dir string, rep *Report, command func(file string) string, src *GherkinSource, w FileWriter) error {
	for i := range rep.Violations {
		v := &rep.Violations[i]
		rel := filepath.ToSlash(filepath.Join("schedules", fmt.Sprintf("%d.json", v.Schedule.N)))
		v.File = rel
		if command != nil {
			v.Command = command(filepath.Join(dir, rel))
		}
		f := ReplayFile{Scenario: rep.Scenario, Replay: v.Replay, Failure: v.Schedule.failure(), Reason: v.Schedule.Reason, Command: v.Command}
		if err := writeJSON(w, rel, f); err != nil {
			return err
		}
		if src == nil || !v.Shrunk {
			continue
		}
		text, err := Gherkin(*src, v.Schedule.N, v.Schedule.failure(), v.Released)
		if err != nil {
			v.GherkinWhy = err.Error()
			continue
		}
		v.Gherkin = strings.TrimSuffix(rel, ".json") + ".feature"
		j := joiningOf(*src, v.Schedule.N)
		v.Joins = &j
		if err := w.WriteFile(v.Gherkin, []byte(text)); err != nil {
			return err
		}
	}
	return writeJSON(w, "explore.json", rep)
}

func writeJSON(w FileWriter, name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return w.WriteFile(name, data)
}

// Markdown is the README section of an exploration.
func Markdown(rep *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Exploration of %s\n\n", rep.Scenario)
	if v := rep.Via; v != nil {
		fmt.Fprintf(&b, "Asked for %s, whose manifest entry redirects its exploration here (explore via %s): %s\n\n", v.From, v.To, mdtextLine(v.Reason))
	}
	fmt.Fprintf(&b, "| | |\n| --- | --- |\n")
	if rep.Product != "" {
		fmt.Fprintf(&b, "| product | %s |\n", mdtextLine(rep.Product))
	}
	fmt.Fprintf(&b, "| strategy | %s |\n| schedules run | %d |\n| distinct write orders | %d |\n| orders seen before | %d |\n",
		rep.Strategy, rep.SchedulesRun, rep.DistinctOrder, rep.Duplicates)
	fmt.Fprintf(&b, "| passed with every invariant | %d |\n| violations | %d |\n| elapsed | %.0f s (%.1f schedules/min) |\n",
		rep.Passed, len(rep.Violations), rep.Elapsed, rep.PerMinute)
	if rep.Exhausted {
		b.WriteString("| exhausted | every order within the strategy's bound ran |\n")
	}
	if len(rep.Branches) > 0 {
		b.WriteString("\nOutcome branches:\n\n| branch | schedules |\n| --- | --- |\n")
		names := make([]string, 0, len(rep.Branches))
		for n := range rep.Branches {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(&b, "| %s | %d |\n", n, rep.Branches[n])
		}
	}
	if len(rep.Violations) > 0 {
		b.WriteString("\nViolating schedules:\n\n")
		for _, v := range rep.Violations {
			shrunk := "not shrunk: another schedule of this failure was"
			if v.Shrunk {
				shrunk = fmt.Sprintf("%d releases forced, shrunk from %d", len(v.Replay), v.ShrunkFrom)
			}
			fmt.Fprintf(&b, "- schedule %d: %s (%s) — `%s`\n", v.Schedule.N, v.Schedule.failure(), shrunk, v.Command)
			for _, x := range v.Schedule.Violations {
				fmt.Fprintf(&b, "  - %s: %s\n", x.Invariant, x.Detail)
			}
			if !v.Shrunk {
				continue
			}
			if v.Schedule.Reason != "" {
				fmt.Fprintf(&b, "  - the scenario: %s\n", mdtextLine(v.Schedule.Reason))
			}
			fmt.Fprintf(&b, "  - forced order: %s\n", orderLine(v.Replay))
			switch {
			case v.Gherkin != "":
				fmt.Fprintf(&b, "  - as a scenario whose barriers force it: `%s`\n", v.Gherkin)
			case v.GherkinWhy != "":
				fmt.Fprintf(&b, "  - no generated scenario: %s\n", v.GherkinWhy)
			}
		}
	}
	return b.String()
}

// orderLine is a schedule's order on one line: "1. poller A PUT request [...]; 2. …".
func orderLine(order []schedule.Signature) string {
	parts := make([]string, len(order))
	for i, s := range order {
		parts[i] = fmt.Sprintf("%d. %s", i+1, s)
	}
	return strings.Join(parts, "; ")
}

// mdtextLine is a reason as one Markdown line: its first line, backticks and pipes escaped.
func mdtextLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return strings.NewReplacer("`", "\\`", "|", "\\|").Replace(first)
}
