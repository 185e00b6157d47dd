// Package render turns a run's records into what a person or a CI tool reads: the view of a
// run (view.go), README.md, index.html with its timelines (SVG, attempts), cucumber.json,
// junit.xml and messages.ndjson (Cucumber Messages, which also needs the feature files' text).
// It reads records only (package record), never the harness nor the archive's files; the
// archive (package results) writes what it renders through its redacting writer. Each
// renderer is checked against a golden file or, for messages.ndjson, by its readers: a strict
// decode into the protocol's Go types and Cucumber's own HTML formatter.
package render
