package gate

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"github.com/ksqlflow/flowtest/internal/base/refusal"
	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/results"
)

// Repo is what a gate plan asks of the SUT's repository: a commit-ish resolved to its full
// id, and the diff between two commits. OpenGit is the real one; a plan needs no more.
type Repo interface {
	Resolve(ctx context.Context, rev string) (string, error)
	Diff(ctx context.Context, base, head string) (results.GateDiff, error)
}

// OpenGit is the SUT repository at dir, refused when dir is not a directory.
func OpenGit(dir string) (Repo, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, refusal.New("--sut-repo %q: not a directory", dir)
	}
	return gitRepo{dir: dir}, nil
}

// gitRepo runs git in the SUT repository as a child process with an explicit environment:
// no user or system git configuration, no pager, no prompt, C locale.
type gitRepo struct{ dir string }

func gitEnv() []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_PAGER=cat",
		"PAGER=cat",
		"LC_ALL=C",
	}
	if runtime.GOOS == "windows" {
		// Windows programs need these to start at all.
		for _, k := range []string{"SYSTEMROOT", "SystemRoot", "PATHEXT", "TEMP", "TMP"} {
			if v := os.Getenv(k); v != "" {
				env = append(env, k+"="+v)
			}
		}
	}
	return env
}

func (g gitRepo) run(ctx context.Context, args ...string) (string, error) {
	full := append([]string{"-C", g.dir, "-c", "core.quotepath=off"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = gitEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := proc.RunBound(cmd); err != nil { // dies with the runner, like every child
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return out.String(), nil
}

// Resolve turns a commit-ish into its full commit id.
func (g gitRepo) Resolve(ctx context.Context, rev string) (string, error) {
	if strings.HasPrefix(rev, "-") {
		return "", fmt.Errorf("%q is not a commit", rev)
	}
	out, err := g.run(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("not a commit of %s", g.dir)
	}
	return strings.TrimSpace(out), nil
}

// Diff is `git diff --stat` from base to head (quoted in the record) and the list of every
// changed file (both sides of a rename: renames are not detected, so a file moved out of a
// rule's path counts as a change there).
func (g gitRepo) Diff(ctx context.Context, base, head string) (results.GateDiff, error) {
	b, err := g.Resolve(ctx, base)
	if err != nil {
		return results.GateDiff{}, err
	}
	statArgs := []string{"diff", "--no-renames", "--stat=200,160", b, head, "--"}
	stat, err := g.run(ctx, statArgs...)
	if err != nil {
		return results.GateDiff{}, err
	}
	names, err := g.run(ctx, "diff", "--no-renames", "--name-only", "-z", b, head, "--")
	if err != nil {
		return results.GateDiff{}, err
	}
	d := results.GateDiff{Base: b, Head: head, Command: "git " + strings.Join(statArgs[:len(statArgs)-1], " "), Stat: stat}
	for _, n := range strings.Split(names, "\x00") {
		if n != "" {
			d.Touched = append(d.Touched, n)
		}
	}
	return d, nil
}
