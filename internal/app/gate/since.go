package gate

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/pack"
)

// sinceEvidence is what --since-archive offers: passing records, and (for a gate archive)
// records it carried over itself.
type sinceEvidence struct {
	dir     string
	since   results.GateSince
	run     *results.Run
	records map[string]*results.Scenario
	files   map[string]string
	gate    *results.GateRecord
}

func readSince(dir string) (*sinceEvidence, error) {
	if pack.IsPack(dir) {
		return nil, errors.New("a pack: unpack it (tar -xzf) and pass the folder; `flowtest archive verify` checks it first")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// Verified first (links, integrity): a pass carried over from a record that its run.json
	// contradicts would be evidence of nothing.
	scen, run, err := results.ReadVerified(abs)
	if err != nil {
		return nil, err
	}
	if run == nil {
		return nil, errors.New("it has no run.json: the run never finished writing it")
	}
	gate, err := results.ReadGate(abs)
	if err != nil {
		return nil, err
	}
	ev := &sinceEvidence{dir: abs, run: run, records: map[string]*results.Scenario{}, files: map[string]string{}, gate: gate,
		since: results.GateSince{Archive: abs, Commit: run.SUT.Commit, Target: run.Target}}
	if gate != nil {
		ev.since.Gate, ev.since.Verdict = gate.Gate, gate.Verdict
	}
	for _, s := range scen {
		ev.records[s.ID] = s
	}
	for _, s := range run.Scenarios {
		if s.File != "" {
			ev.files[s.ID] = s.File
		}
	}
	return ev, nil
}

// evidenceFor finds where scenario id last passed: its record in this archive, or the record
// this archive carried it over from (checked against its sha256 again). problem says why
// there is none.
func (ev *sinceEvidence) evidenceFor(id string) (*results.CarriedOver, string) {
	if s := ev.records[id]; s != nil && s.Status == results.StatusPassed {
		file := ev.files[id]
		if file == "" {
			file = results.ScenarioDir + "/" + results.SanitizeLabel(id) + ".json"
		}
		sum, err := results.FileSHA256(filepath.Join(ev.dir, filepath.FromSlash(file)))
		if err != nil {
			return nil, "its passing record cannot be read: " + err.Error()
		}
		return &results.CarriedOver{Archive: ev.dir, Commit: ev.run.SUT.Commit, Target: ev.run.Target, Record: file, SHA256: sum, Passed: s.End}, ""
	}
	if ev.gate != nil {
		for _, gs := range ev.gate.Scenarios {
			if gs.ID != id || gs.Status != results.StatusCarriedOver || gs.CarriedOver == nil {
				continue
			}
			prev := *gs.CarriedOver
			sum, err := results.FileSHA256(filepath.Join(prev.Archive, filepath.FromSlash(prev.Record)))
			switch {
			case err != nil:
				return nil, fmt.Sprintf("carried over in %s from %s/%s, which cannot be read now: %v", ev.dir, prev.Archive, prev.Record, err)
			case sum != prev.SHA256:
				return nil, fmt.Sprintf("carried over in %s from %s/%s, whose sha256 is now %s, not %s: the record changed", ev.dir, prev.Archive, prev.Record, sum, prev.SHA256)
			}
			return &results.CarriedOver{Archive: prev.Archive, Commit: prev.Commit, Target: prev.Target, Record: prev.Record, SHA256: prev.SHA256, Passed: prev.Passed}, ""
		}
	}
	if s := ev.records[id]; s != nil {
		return nil, fmt.Sprintf("it did not pass in %s (%s)", ev.dir, s.Status)
	}
	return nil, "no record of it in " + ev.dir
}
