// Package ksqlresult reads the Execution Result files kSQL-Flow leaves, one per attempt, in
// the KSQL_FLOW_WORKDIR FlowNet gives it (`metadata/<sanitized attempt id>.json`,
// product-contract §7). Their times keep milliseconds, where kintone's DATETIME fields keep
// minutes: the steps compare them, and the runner records them beside each node attempt so
// the timeline can draw attempts where they ran.
//
// It imports nothing of ours: the step library (which names the directory) and the command
// that records the attempts both use it.
package ksqlresult

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// WorkDir is the KSQL_FLOW_WORKDIR of a scenario whose work dir is scenarioDir: one per
// scenario, so the result files in it are the scenario's own.
func WorkDir(scenarioDir string) string { return filepath.Join(scenarioDir, "ksql-work") }

// Result is the part of an Execution Result the harness reads.
type Result struct {
	AttemptID   string `json:"attemptId"`
	ExecutionID string `json:"executionId"`
	// StartedAt is null when kSQL-Flow did not start executing.
	StartedAt  *string `json:"startedAt"`
	FinishedAt string  `json:"finishedAt"`
	DurationMS int64   `json:"durationMs"`
}

// Times are the result's start and finish; start is zero when the result has none.
func (r Result) Times() (start, finish time.Time, err error) {
	finish, err = time.Parse(time.RFC3339Nano, r.FinishedAt)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("execution result of attempt %s: finishedAt %q: %w", r.AttemptID, r.FinishedAt, err)
	}
	if r.StartedAt != nil {
		start, err = time.Parse(time.RFC3339Nano, *r.StartedAt)
		if err != nil {
			return time.Time{}, time.Time{}, fmt.Errorf("execution result of attempt %s: startedAt %q: %w", r.AttemptID, *r.StartedAt, err)
		}
	}
	return start.UTC(), finish.UTC(), nil
}

// ErrNoResults is returned by Read when workDir holds no metadata folder: no FlowNet of the
// scenario ran a node.
var ErrNoResults = errors.New("no execution results")

// Read reads every result file under workDir's metadata folder, keyed by the attempt id each
// echoes. They are matched by content, not by file name: the sanitizing rule is FlowNet's. A
// file that cannot be read or parsed (kSQL-Flow killed while writing it is a case the
// product handles) is named in the error; the others are still returned.
func Read(workDir string) (map[string]Result, error) {
	dir := filepath.Join(workDir, "metadata")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s", ErrNoResults, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("execution results: %w", err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	out := map[string]Result{}
	var bad []error
	for _, name := range names {
		r, err := readOne(filepath.Join(dir, name))
		if err != nil {
			bad = append(bad, fmt.Errorf("execution result %s: %w", name, err))
			continue
		}
		out[r.AttemptID] = r
	}
	return out, errors.Join(bad...)
}

func readOne(path string) (Result, error) {
	var r Result
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, err
	}
	if r.AttemptID == "" {
		return r, errors.New("no attemptId")
	}
	return r, nil
}
