package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ksqlflow/flowtest/results/redact"
)

// FailedScenarios returns, in run order, the ids of the scenarios whose file in the archive
// says "failed", "blocked" or "interrupted" — every scenario that ran without passing (for
// `flowtest run --rerun <dir>`). It reads the scenario files, not run.json,
// so it also works on an archive of an interrupted run. Files being written (temporary names)
// are skipped; a file that is not valid JSON, or of a newer schema, is an error.
func FailedScenarios(archiveDir string) ([]string, error) {
	scen, run, err := ReadArchive(archiveDir)
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

// VerifyMain is `flowtest archive verify <dir|pack>` without an expected digest (see
// VerifyMainWith).
func VerifyMain(dir string, env map[string]string, appIDs []string, stdout, stderr io.Writer) int {
	return VerifyMainWith(dir, VerifyOptions{Env: env, AppIDs: appIDs}, stdout, stderr)
}

// VerifyOptions are the inputs of `flowtest archive verify`.
type VerifyOptions struct {
	Env    map[string]string // secrets are taken from it (SecretsFromEnv)
	AppIDs []string
	// SHA256 is the pack's expected digest; empty: the <pack>.sha256 file beside it, if any.
	SHA256 string
}

// VerifyMainWith is `flowtest archive verify <dir|pack>`. A pack (.tar.gz) is checked against
// its detached digest and the SHA256SUMS inside (every changed, missing or added file is
// named), then its files are scanned for leaks; a folder is scanned for leaks and, when it
// holds a SHA256SUMS (an unpacked pack), checked against it. Secrets come from o.Env, app ids
// from the caller's configuration. It prints one line per problem ("file:offset: kind" for a
// leak, never the value) and returns 1 on a problem, 0 when clean, 2 when the input cannot be
// read.
func VerifyMainWith(target string, o VerifyOptions, stdout, stderr io.Writer) int {
	secrets := redact.SecretsFromEnv(o.Env)
	dir := target
	var manifestProblems []string
	manifestNote := ""
	if st, err := os.Stat(target); err == nil && !st.IsDir() && IsPack(target) {
		tmp, err := os.MkdirTemp("", "flowtest-verify-")
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		defer os.RemoveAll(tmp)
		pc, err := VerifyPack(target, o.SHA256, tmp)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		manifestProblems = pc.Problems
		detached := "no detached digest to compare (pass --sha256 or keep <pack>.sha256 beside it)"
		if pc.Detached != "" {
			detached = "detached sha256 compared"
		}
		manifestNote = fmt.Sprintf("pack %s: sha256 %s, %d file(s) in %s/, %s", target, pc.SHA256, pc.Files, pc.Folder, detached)
		dir = tmp
	} else if err == nil && st.IsDir() {
		probs, present, err := CheckManifestDir(target)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		manifestProblems = probs
		if present {
			manifestNote = "checked against its " + SumsFile
		}
	}
	leaks, err := redact.Verify(dir, secrets, o.AppIDs)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	// Whether the archive is whole is checked apart from the leak scan: a truncated or
	// missing record says "no leaks" to a byte scan.
	broken := CheckIntegrity(dir)
	for _, p := range manifestProblems {
		fmt.Fprintln(stdout, "manifest: "+p)
	}
	for _, p := range broken {
		fmt.Fprintln(stdout, "integrity: "+p.String())
	}
	for _, l := range leaks {
		fmt.Fprintln(stdout, l.String())
	}
	if manifestNote != "" {
		fmt.Fprintln(stdout, "archive verify: "+manifestNote)
	}
	if len(leaks) > 0 || len(manifestProblems) > 0 || len(broken) > 0 {
		fmt.Fprintf(stderr, "archive verify: %d manifest problem(s), %d integrity problem(s), %d leak(s) in %s\n", len(manifestProblems), len(broken), len(leaks), target)
		return 1
	}
	fmt.Fprintf(stdout, "archive verify: no leaks in %s (%d secret value(s), %d app id(s) checked); its records are whole and agree with run.json\n", target, len(secrets), len(o.AppIDs))
	return 0
}
