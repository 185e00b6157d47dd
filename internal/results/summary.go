// Package results owns everything that leaves a flowtest run: one record per scenario,
// run.json, the acceptance record README.md, cucumber.json and junit.xml, all written into a
// dated archive folder through a single redacting writer, plus the leak check that re-scans an
// archive (`flowtest archive verify`) and the reader behind `flowtest run --rerun`. The record
// types themselves are package record's (aliased in records.go).
package results

import "strings"

// Summarize builds the run.json row for a scenario; file is its path relative to the archive.
func Summarize(s *Scenario, file string) ScenarioSummary {
	return ScenarioSummary{
		ID: s.ID, Name: s.Name, Feature: s.Feature, Series: s.Series, Extended: s.Extended, Tags: append([]string(nil), s.Tags...),
		Status: s.Status, Reason: s.Reason, KnownDefect: s.KnownDefect, DurationMS: s.DurationMS, SetupMS: s.SetupMS, File: file,
	}
}

// ComputeTotals counts the summaries.
func ComputeTotals(sums []ScenarioSummary) Totals {
	var t Totals
	for _, s := range sums {
		t.Total++
		t.DurationMS += s.DurationMS
		if s.Extended {
			t.Extended++
		}
		switch s.Status {
		case StatusPassed:
			t.Passed++
			if s.KnownDefect.Stale() {
				t.KnownDefectsNotReproduced++
			}
		case StatusFailed:
			t.Failed++
			if s.KnownDefect.Excused() {
				t.KnownDefects++
			}
		case StatusBlocked:
			t.Blocked++
		case StatusInterrupted:
			t.Interrupted++
		default:
			t.NotRun++
			if s.NotSelected() {
				t.NotSelected++
			}
		}
	}
	return t
}

// IsOtherShard reports whether a not-run reason says another shard runs the scenario.
func IsOtherShard(reason string) bool { return strings.HasPrefix(reason, ReasonOtherShardPrefix) }
