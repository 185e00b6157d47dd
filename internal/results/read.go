package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// FailedScenarios returns, in run order, the ids of the scenarios whose file in the archive
// says "failed", "blocked" or "interrupted" — every scenario that ran without passing (for
// `flowtest run --rerun <dir>`). The archive is read only when it passes CheckReadable, so
// its records and run.json agree (a failure that only one of them shows would otherwise be
// dropped from the rerun, or run though it passed); the ids come from the records, which
// also holds for an interrupted run, whose run.json may lack the last ones. Files being
// written (temporary names) are skipped.
func FailedScenarios(archiveDir string) ([]string, error) {
	scen, run, err := ReadVerified(archiveDir)
	if err != nil {
		return nil, err
	}
	pos := map[string]int{}
	if run != nil {
		for i, id := range run.RunOrder {
			if _, ok := pos[id]; !ok {
				pos[id] = i
			}
		}
	}
	sort.SliceStable(scen, func(i, j int) bool {
		pi, iok := pos[scen[i].ID]
		pj, jok := pos[scen[j].ID]
		if iok && jok && pi != pj {
			return pi < pj
		}
		if iok != jok {
			return iok
		}
		return scen[i].Start.Before(scen[j].Start)
	})
	var ids []string
	seen := map[string]bool{}
	for _, s := range scen {
		if (s.Status == StatusFailed || s.Status == StatusBlocked || s.Status == StatusInterrupted) && !seen[s.ID] {
			seen[s.ID] = true
			ids = append(ids, s.ID)
		}
	}
	return ids, nil
}

// ReadArchive reads an archive's scenario files and run.json (nil when the run never got
// far enough to write it). A folder with neither run.json nor scenarios/ is not an archive.
func ReadArchive(archiveDir string) ([]*Scenario, *Run, error) {
	st, err := os.Stat(archiveDir)
	if err != nil {
		return nil, nil, fmt.Errorf("read archive: %w", err)
	}
	if !st.IsDir() {
		return nil, nil, fmt.Errorf("read archive: %s is not a directory", archiveDir)
	}
	var run *Run
	runData, runErr := os.ReadFile(filepath.Join(archiveDir, "run.json"))
	if runErr == nil {
		run = &Run{}
		if err := json.Unmarshal(runData, run); err != nil {
			return nil, nil, fmt.Errorf("read archive %s: run.json: %w", archiveDir, err)
		}
		if run.SchemaVersion > SchemaVersion {
			return nil, nil, fmt.Errorf("read archive %s: run.json has schema_version %d, this flowtest reads up to %d", archiveDir, run.SchemaVersion, SchemaVersion)
		}
	} else if !errors.Is(runErr, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("read archive %s: %w", archiveDir, runErr)
	}
	entries, err := os.ReadDir(filepath.Join(archiveDir, ScenarioDir))
	if errors.Is(err, fs.ErrNotExist) {
		if run == nil {
			return nil, nil, fmt.Errorf("%s is not a flowtest archive: it has neither run.json nor %s/", archiveDir, ScenarioDir)
		}
		return nil, run, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read archive %s: %w", archiveDir, err)
	}
	var scen []*Scenario
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, TempPrefix) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(archiveDir, ScenarioDir, name))
		if err != nil {
			return nil, nil, fmt.Errorf("read archive %s: %w", archiveDir, err)
		}
		s := &Scenario{}
		if err := json.Unmarshal(data, s); err != nil {
			return nil, nil, fmt.Errorf("read archive %s: %s/%s: %w", archiveDir, ScenarioDir, name, err)
		}
		if s.SchemaVersion > SchemaVersion {
			return nil, nil, fmt.Errorf("read archive %s: %s/%s has schema_version %d, this flowtest reads up to %d", archiveDir, ScenarioDir, name, s.SchemaVersion, SchemaVersion)
		}
		scen = append(scen, s)
	}
	return scen, run, nil
}

// FeatureSources reads the feature texts an archive's messages.ndjson carries (its source
// messages), by path: `archive merge` hands them to the merged archive, whose stream needs
// them. An archive without the file (written before it existed) has none; a line that is not
// JSON is an error naming it.
func FeatureSources(archiveDir string) (map[string][]byte, error) {
	data, err := os.ReadFile(filepath.Join(archiveDir, MessagesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read feature sources: %w", err)
	}
	out := map[string][]byte{}
	n := 0
	for line := range strings.Lines(string(data)) {
		n++
		if !strings.HasPrefix(line, `{"source":`) {
			continue
		}
		var e struct {
			Source struct {
				URI  string `json:"uri"`
				Data string `json:"data"`
			} `json:"source"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", filepath.Join(archiveDir, MessagesFile), n, err)
		}
		out[e.Source.URI] = []byte(e.Source.Data)
	}
	return out, nil
}
