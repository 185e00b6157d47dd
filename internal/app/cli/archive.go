package cli

// flowtest archive verify | pack: the archive a reviewer receives. `pack` seals a results
// folder into one reproducible .tar.gz with a SHA256SUMS manifest inside and prints the
// pack's own sha256 (also written to <pack>.sha256); `verify` re-scans a folder or a pack for
// leaks with the current environment's secrets and, for a pack (or an unpacked one), checks
// every file against the manifest, naming each file that changed.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ksqlflow/flowtest/internal/base/flagcheck"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/pack"
	"github.com/ksqlflow/flowtest/internal/results/redact"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// verifyFlags are the flags of `flowtest archive verify`.
type verifyFlags struct {
	archiveFlags
	sha string
}

func (f *verifyFlags) bind(fs *flag.FlagSet) {
	f.archiveFlags.bind(fs)
	fs.StringVar(&f.sha, "sha256", "", "expected sha256 of a pack (default: the <pack>.sha256 file beside it, if any)")
}

// cmdVerify scans an archive folder or pack for the current environment's secrets (in every
// encoding) and raw app ids; a pack (or a folder holding SHA256SUMS) is also checked against
// its manifest and, for a pack, against its detached digest; the JSON files of either are
// checked against the schemas (results.ValidateArchive, ValidatePack).
func cmdVerify(inv invocation, f *verifyFlags, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	if !archiveArgs(inv, args, 1, 1) {
		return runner.ExitRefused
	}
	env, appIDs, err := f.scanInputs(inv.uses)
	if err != nil {
		return exitFor(stderr, "archive verify", err)
	}
	code := pack.VerifyMainWith(args[0], pack.VerifyOptions{Env: env, AppIDs: appIDs, SHA256: f.sha}, stdout, stderr)
	if code == runner.ExitRefused {
		return code
	}
	// The JSON files, of a folder or a pack, are also checked against their schemas.
	if schemaProblems(args[0], stdout, stderr) && code == 0 {
		code = runner.ExitFailed
	}
	return code
}

// refuseMembers prints every member of an archive folder that is a link or a special file
// (results.Members), one line each, and returns an error when there was one or the folder
// cannot be walked.
func refuseMembers(stderr io.Writer, cmd, dir string) error {
	_, probs, err := results.Members(dir)
	if err != nil {
		fmt.Fprintf(stderr, "flowtest %s: %v\n", cmd, err)
		return err
	}
	for _, p := range probs {
		fmt.Fprintf(stderr, "flowtest %s: refused: %s: %s\n", cmd, dir, p)
	}
	if len(probs) > 0 {
		return fmt.Errorf("%d member(s) of %s refused", len(probs), dir)
	}
	return nil
}

// packFlags are the flags of `flowtest archive pack`.
type packFlags struct {
	archiveFlags
	out   string
	force bool
}

func (f *packFlags) bind(fs *flag.FlagSet) {
	f.archiveFlags.bind(fs)
	fs.StringVar(&f.out, "out", "", "the pack to write (default: <dir>.tar.gz beside the folder)")
	fs.BoolVar(&f.force, "force", false, "replace an existing pack of that name (default: refuse, exit 2)")
}

// cmdPack seals an archive: leak scan first (a pack with a secret in it is refused), then
// <dir>.tar.gz (or --out) with SHA256SUMS inside; prints the detached sha256.
func cmdPack(inv invocation, f *packFlags, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	if !archiveArgs(inv, args, 1, 1) {
		return runner.ExitRefused
	}
	dir := filepath.Clean(args[0])
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "flowtest archive pack: %q is not an archive folder\n", args[0])
		return runner.ExitRefused
	}
	dst := f.out
	if dst == "" {
		dst = dir + pack.PackExt
	} else if !pack.IsPack(dst) {
		fmt.Fprintf(stderr, "flowtest archive pack: --out %q: the pack's name must end in %s\n", dst, pack.PackExt)
		return runner.ExitRefused
	}
	// --out must be a file that can be written, and not inside the folder it seals: the pack
	// and its digest file would change that folder, which would no longer be what was sealed.
	err := flagcheck.CreatableFile("--out", dst)
	if err == nil {
		err = flagcheck.NotInside("--out", dst, []string{dir}, "the archive being packed")
	}
	if err != nil {
		return exitFor(stderr, "archive pack", err)
	}
	// Links and special files are refused before anything reads the folder: the leak scan
	// does not follow a link, so a secret behind one would be sealed unseen.
	if err := refuseMembers(stderr, "archive pack", dir); err != nil {
		return runner.ExitRefused
	}
	env, appIDs, err := f.scanInputs(inv.uses)
	if err != nil {
		return exitFor(stderr, "archive pack", err)
	}
	leaks, err := redact.Verify(dir, redact.SecretsFromEnv(env), appIDs)
	if err != nil {
		fmt.Fprintf(stderr, "flowtest archive pack: %v\n", err)
		return runner.ExitRefused
	}
	if len(leaks) > 0 {
		for _, l := range leaks {
			fmt.Fprintln(stdout, l.String())
		}
		fmt.Fprintf(stderr, "flowtest archive pack: refused: %d leak(s) in %s\n", len(leaks), dir)
		return runner.ExitFailed
	}
	if broken := results.CheckIntegrity(dir); len(broken) > 0 {
		// Sealing a truncated or inconsistent archive would give it a digest it does not deserve.
		for _, p := range broken {
			fmt.Fprintln(stdout, "integrity: "+p.String())
		}
		fmt.Fprintf(stderr, "flowtest archive pack: refused: %d integrity problem(s) in %s\n", len(broken), dir)
		return runner.ExitFailed
	}
	if err := inv.stopped("the pack"); err != nil {
		return exitFor(stderr, "archive pack", err)
	}
	write := pack.Pack
	if f.force {
		write = pack.PackReplace
	}
	sum, err := write(dir, dst)
	if errors.Is(err, pack.ErrPackExists) {
		fmt.Fprintf(stderr, "flowtest archive pack: refused: %s exists and is not replaced (it may already be with a reviewer under its digest); pass --force to replace it, or --out another name\n", dst)
		return runner.ExitRefused
	}
	if err != nil {
		fmt.Fprintf(stderr, "flowtest archive pack: %v\n", err)
		if strings.Contains(err.Error(), "does not match its own") {
			return runner.ExitFailed
		}
		return runner.ExitRefused
	}
	fmt.Fprintf(stdout, "%s  %s\n", sum, dst)
	fmt.Fprintf(stdout, "archive pack: %s (sha256 above, also in %s.sha256); check it with: flowtest archive verify %s\n", dst, dst, dst)
	return 0
}
