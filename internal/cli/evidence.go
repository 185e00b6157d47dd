package cli

// flowtest evidence --before A --after B: the incident practice's test-evidence table from
// two archives of the same scenarios, one run on the code before a fix and one after it
// (shared/seeds/002): one row per criterion with the revision, command, exit code, observed
// assertion and record path of each side, a status and the limits. A row is pass only when
// the scenario failed before and passes after.

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ksqlflow/flowtest/results/evidence"
	"github.com/ksqlflow/flowtest/runner"
)

func cmdEvidence(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("evidence", flag.ContinueOnError)
	before := fset.String("before", "", "archive of the run on the code before the fix (required)")
	after := fset.String("after", "", "archive of the run on the code after the fix (required)")
	features := fset.String("features", "features", "directory of the run-order manifest (for each scenario's known limits)")
	asJSON := fset.Bool("json", false, "print the rows as JSON instead of Markdown")
	out := fset.String("out", "", "also write the Markdown table to this file (e.g. test-evidence.md)")
	if _, code, ok := parseFlags(fset, "evidence", args, stderr); !ok {
		return code
	}
	if fset.NArg() > 0 || *before == "" || *after == "" {
		fmt.Fprintln(stderr, "usage: flowtest evidence --before <archive> --after <archive> [--json] [--out test-evidence.md]")
		return runner.ExitRefused
	}
	limits := map[string]string{}
	if m, err := runner.LoadManifest(os.DirFS(*features), "manifest.yaml"); err == nil {
		for _, e := range m.Scenarios {
			limits[e.ID] = e.Limits
		}
	}
	ba, err := evidence.CompareArchives(*before, *after, limits)
	if err != nil {
		fmt.Fprintf(stderr, "flowtest evidence: %v\n", err)
		return runner.ExitRefused
	}
	md := ba.Markdown()
	if *asJSON {
		data, err := json.MarshalIndent(ba, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "flowtest evidence: %v\n", err)
			return runner.ExitFailed
		}
		fmt.Fprintln(stdout, string(data))
	} else {
		stdout.Write(md)
	}
	if *out != "" {
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err == nil {
			err = os.WriteFile(*out, md, 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "flowtest evidence: --out: %v\n", err)
			return runner.ExitFailed
		}
	}
	c := ba.Counts()
	fmt.Fprintf(stderr, "flowtest evidence: %d rows: %d pass, %d fail, %d blocked, %d not run, %d do not demonstrate the fix\n",
		len(ba.Rows), c[evidence.EvidencePass], c[evidence.EvidenceFail], c[evidence.EvidenceBlocked], c[evidence.EvidenceNotRun], c[evidence.EvidenceNotDemonstrated])
	if len(ba.Rows) == 0 {
		fmt.Fprintln(stderr, "flowtest evidence: no scenario ran in either archive: no evidence")
		return runner.ExitFailed
	}
	if c[evidence.EvidencePass] != len(ba.Rows) {
		return runner.ExitFailed // evidence that does not show the fix everywhere is not green
	}
	return 0
}
