package results

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

// CompleteGate fills the status of every scenario g lists without one from run (its summary
// in run.Scenarios; a scenario with no summary is not run) and decides the verdict.
func CompleteGate(g *GateRecord, run *Run) {
	g.SchemaVersion = SchemaVersion
	byID := map[string]ScenarioSummary{}
	if run != nil {
		for _, s := range run.Scenarios {
			byID[s.ID] = s
		}
	}
	for i := range g.Scenarios {
		gs := &g.Scenarios[i]
		if gs.Status != "" {
			continue
		}
		s, ok := byID[gs.ID]
		switch {
		case !ok:
			gs.Status, gs.Why = StatusNotRun, "no record of it in this run"
		case s.Status == StatusNotRun && s.NotRunCategory == NotRunTag:
			// The gate's own selection ran it; a tag filter here means the run did not.
			gs.Status, gs.Why = StatusNotRun, "not selected by the run: "+s.Reason
		default:
			gs.Status, gs.Why, gs.File = s.Status, s.Reason, s.File
			if m := s.KnownDefect; m != nil {
				if m.Excused() {
					gs.KnownDefect = m.ID
				}
				gs.Why = strings.TrimSuffix(m.Text()+": "+gs.Why, ": ")
			}
		}
	}
	interrupted := run != nil && run.State == RunInterrupted
	g.Verdict, g.VerdictWhy = decideGate(g.Scenarios, interrupted)
	g.Counts = countGate(g.Scenarios)
	if run != nil {
		g.APIRequests = run.APIRequests
	}
	g.Decided = time.Now().UTC()
}

func countGate(scen []GateScenario) GateCounts {
	var c GateCounts
	for _, s := range scen {
		c.Total++
		switch s.Status {
		case StatusPassed:
			c.Passed++
		case StatusCarriedOver:
			c.CarriedOver++
		case StatusFailed:
			c.Failed++
		case StatusBlocked:
			c.Blocked++
		case StatusInterrupted:
			c.Interrupted++
		default:
			c.NotRun++
		}
	}
	return c
}

// decideGate: FAIL when a scenario failed, a known product defect too (the failed scenario
// is listed with its KPD id): a gate certifies the product against its contract, and a known
// defect is a documented breach of it, whatever the run's exit code says; otherwise INCOMPLETE when one is blocked,
// interrupted or not run (or the run was interrupted, or the gate has no scenario); PASS
// only when every scenario passed or was carried over.
func decideGate(scen []GateScenario, interrupted bool) (verdict, why string) {
	byStatus := map[string][]string{}
	for _, s := range scen {
		st := s.Status
		if st != StatusPassed && st != StatusCarriedOver && st != StatusFailed && st != StatusBlocked && st != StatusInterrupted {
			st = StatusNotRun
		}
		id := s.ID
		if s.KnownDefect != "" {
			id += " (known product defect " + s.KnownDefect + ")"
		}
		byStatus[st] = append(byStatus[st], id)
	}
	list := func(st string) string {
		ids := byStatus[st]
		if len(ids) > 5 {
			return strings.Join(ids[:5], ", ") + fmt.Sprintf(", … (%d in all)", len(ids))
		}
		return strings.Join(ids, ", ")
	}
	if n := len(byStatus[StatusFailed]); n > 0 {
		return GateFail, fmt.Sprintf("%d scenario(s) failed: %s", n, list(StatusFailed))
	}
	var gaps []string
	for _, st := range []string{StatusBlocked, StatusInterrupted, StatusNotRun} {
		if n := len(byStatus[st]); n > 0 {
			gaps = append(gaps, fmt.Sprintf("%d %s (%s)", n, record.StatusWord(st), list(st)))
		}
	}
	if interrupted {
		gaps = append(gaps, "the run was interrupted")
	}
	if len(scen) == 0 {
		gaps = append(gaps, "the gate has no scenario")
	}
	if len(gaps) > 0 {
		return GateIncomplete, "not every scenario of the gate passed or was carried over: " + strings.Join(gaps, "; ")
	}
	return GatePass, fmt.Sprintf("%d passed in this run, %d carried over", len(byStatus[StatusPassed]), len(byStatus[StatusCarriedOver]))
}

// ReadGate reads an archive's gate.json; (nil, nil) when the archive has none.
func ReadGate(archiveDir string) (*GateRecord, error) {
	data, err := os.ReadFile(filepath.Join(archiveDir, GateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read gate record: %w", err)
	}
	g := &GateRecord{}
	if err := json.Unmarshal(data, g); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(archiveDir, GateFile), err)
	}
	if g.SchemaVersion > SchemaVersion {
		return nil, fmt.Errorf("%s has schema_version %d, this flowtest reads up to %d", filepath.Join(archiveDir, GateFile), g.SchemaVersion, SchemaVersion)
	}
	return g, nil
}

// FileSHA256 is the hex SHA-256 of a file's bytes.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
