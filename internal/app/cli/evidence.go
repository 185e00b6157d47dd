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
	"os"
	"path/filepath"

	"github.com/ksqlflow/flowtest/internal/base/flagcheck"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/evidence"
	"github.com/ksqlflow/flowtest/internal/results/redact"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// evidenceFlags are the flags of `flowtest evidence`; the manifest (--features) gives each
// scenario's known limits.
type evidenceFlags struct {
	runFlags
	before, after, out string
	asJSON             bool
}

func (f *evidenceFlags) bind(fs *flag.FlagSet) {
	f.bindNamed(fs, "features")
	fs.StringVar(&f.before, "before", "", "archive of the run on the code before the fix (required)")
	fs.StringVar(&f.after, "after", "", "archive of the run on the code after the fix (required)")
	fs.BoolVar(&f.asJSON, "json", false, "print the rows as JSON instead of Markdown")
	fs.StringVar(&f.out, "out", "", "also write the Markdown table to this file (e.g. test-evidence.md)")
}

func cmdEvidence(inv invocation, f *evidenceFlags, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	if len(args) > 0 || f.before == "" || f.after == "" {
		return refuseUsage(stderr, inv.usage)
	}
	if f.out != "" {
		// Refused before anything is read or printed: a table that cannot be written, or one
		// written into an archive it compares, is no evidence.
		err := flagcheck.CreatableFile("--out", f.out)
		if err == nil {
			err = flagcheck.NotInside("--out", f.out, []string{f.before, f.after}, "the archive")
		}
		if err != nil {
			return exitFor(stderr, "evidence", err)
		}
	}
	limits := map[string]string{}
	if m, err := runner.LoadManifest(os.DirFS(f.features), "manifest.yaml"); err == nil {
		for _, e := range m.Scenarios {
			limits[e.ID] = e.Limits
		}
	}
	ba, err := evidence.CompareArchives(f.before, f.after, limits)
	if err != nil {
		fmt.Fprintf(stderr, "flowtest evidence: %v\n", err)
		return runner.ExitRefused
	}
	if err := inv.stopped("the evidence rows"); err != nil {
		return exitFor(stderr, "evidence", err)
	}
	// The archives were redacted when written, perhaps under another environment: what this
	// command prints and writes passes this environment's redactor too, and --out is
	// leak-checked.
	red := redact.New(redact.SecretsFromEnv(envMap(os.Environ())), nil)
	stdout = redactConsole(stdout, red)
	md := red.Bytes(ba.Markdown())
	if f.asJSON {
		data, err := json.MarshalIndent(ba, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "flowtest evidence: %v\n", err)
			return runner.ExitFailed
		}
		fmt.Fprintln(stdout, string(data))
	} else {
		stdout.Write(md)
	}
	if f.out != "" {
		// The one redacting writer, like the archive's files (md is redacted already; the
		// writer makes the file whole and its mode the archive's).
		if err := results.NewWriter(filepath.Dir(f.out), red, results.JSONAsBytes).WriteFile(filepath.Base(f.out), md); err != nil {
			fmt.Fprintf(stderr, "flowtest evidence: --out: %v\n", err)
			return runner.ExitFailed
		}
		if !filesLeakFree(stderr, []string{f.out}, redact.SecretsFromEnv(envMap(os.Environ())), nil) {
			fmt.Fprintf(stderr, "flowtest evidence: --out %s holds a secret (above)\n", f.out)
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
