// Package gatetest makes git repositories for tests of release gates (the gate package's own
// and the end-to-end gate run of internal/app/cli).
package gatetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TwoCommitRepo makes a git repository with two commits: c0 with src/io and docs, c1 changing
// only what change names. It returns the directory and both commits.
func TwoCommitRepo(t *testing.T, change string) (string, string, string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	g := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		// No user or system configuration: the commits are the same on every machine.
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return strings.TrimSpace(string(out))
	}
	g("init", "-q")
	write := func(p, s string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644))
	}
	write("src/io/reader.ts", "export const r = 1\n")
	write("docs/notes.md", "# notes\n")
	g("add", "-A")
	g("commit", "-q", "-m", "c0")
	c0 := g("rev-parse", "HEAD")
	write(change, "changed\n")
	g("add", "-A")
	g("commit", "-q", "-m", "c1")
	return dir, c0, g("rev-parse", "HEAD")
}
