package pack

import (
	"fmt"
	"io"
	"os"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/redact"
)

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
// read or holds a member no archive holds (a link, a device, a pipe: results.Members).
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
		// A link or a special file is refused before the folder is read, as a pack holding one
		// is (VerifyPack): the leak scan does not follow a link, so what is behind one would
		// pass unseen, and a pipe would block the reader.
		_, refused, err := results.Members(target)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		for _, p := range refused {
			fmt.Fprintf(stderr, "archive verify: refused: %s: %s\n", target, p)
		}
		if len(refused) > 0 {
			return 2
		}
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
	broken := results.CheckIntegrity(dir)
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
