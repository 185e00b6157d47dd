// Package render turns a run's records into what a person or a CI tool reads: the view of a
// run (view.go), README.md, index.html with its timelines (SVG, attempts), cucumber.json and
// junit.xml. It reads records only (package record), never the harness nor the archive's
// files; the archive (package results) writes what it renders through its redacting writer.
// Each renderer is checked against a golden file.
package render
