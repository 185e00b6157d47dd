package render

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

// IndexFile is the acceptance record as one self-contained HTML page: no script, no external
// asset (style sheet, font, image) of any kind; the timelines are inline SVG.
const IndexFile = "index.html"

// Colours of the page, one per status; the screenshot test looks for some of them.
const (
	colPassed      = "#2e7d32"
	colFailed      = "#c62828"
	colBlocked     = "#6a1b9a"
	colInterrupted = "#ef6c00"
	colNotRun      = "#9e9e9e"
	colCarried     = "#1565c0"
	colProcess     = "#455a64"
	colWait        = "#00838f"
	colBarrier     = "#ad1457"
	colAttempt     = "#5d4037"
)

func statusColour(st string) string {
	switch st {
	case record.StatusPassed, record.GatePass, record.WaitReached:
		return colPassed
	case record.StatusFailed, record.GateFail, record.WaitTimedOut:
		return colFailed
	case record.StatusBlocked:
		return colBlocked
	case record.StatusInterrupted, record.WaitGaveUp:
		return colInterrupted
	case record.StatusCarriedOver:
		return colCarried
	case record.GateIncomplete:
		return colInterrupted
	}
	return colNotRun
}

// indexTemplate writes index.html over the page's model (indexPage in view.go); html/template
// escapes every text the run brings, in the context it lands in.
//
//go:embed index.html.tmpl
var indexTemplateText string

var indexTemplate = template.Must(template.New(IndexFile).Parse(indexTemplateText))

// Index renders index.html from the run's view; the page goes through the archive writer once
// more. The template escaper writes a few characters otherwise than the hand-built page did
// ('+' as "&#43;", a NUL byte as U+FFFD): the same text to a browser.
func Index(v *View) ([]byte, error) {
	var b bytes.Buffer
	if err := indexTemplate.Execute(&b, v.page()); err != nil {
		return nil, fmt.Errorf("render %s: %w", IndexFile, err)
	}
	return b.Bytes(), nil
}
