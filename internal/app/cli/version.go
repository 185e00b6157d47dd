package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/ksqlflow/flowtest/internal/results"
)

// The runner version, shared by the table (`flowtest version`) and the run records.

// Version is the runner version written into run.json (set with
// -ldflags "-X github.com/ksqlflow/flowtest/internal/app/cli.Version=…" at release).
var Version = "0.1.0-dev"

// Commit is the commit flowtest was built from when the build stamps it with -ldflags
// (`make build` does): Go's own VCS stamp is missing in a git worktree (.git is a file there)
// and under GOFLAGS=-buildvcs=false, and the binary should still name its commit.
var Commit = ""

// readBuildInfo is debug.ReadBuildInfo; tests replace it so that no output embeds the commit
// the test binary happens to be built from.
var readBuildInfo = debug.ReadBuildInfo

// build is the flowtest binary running: Version, and the commit and dirty flag that `go build`
// stamps from the git checkout it builds in (vcs.revision, vcs.modified), which wins over
// Commit. A binary built outside a checkout, without either, has no commit.
func build() *results.FlowtestBuild {
	b := &results.FlowtestBuild{Version: Version, Commit: Commit}
	info, ok := readBuildInfo()
	if !ok {
		return b
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// versionLine is what `flowtest version` prints.
func versionLine(b *results.FlowtestBuild) string {
	switch {
	case b.Commit == "":
		return fmt.Sprintf("flowtest %s (commit unknown)", b.Version)
	case b.Modified:
		return fmt.Sprintf("flowtest %s (commit %s, with uncommitted changes)", b.Version, b.Commit)
	default:
		return fmt.Sprintf("flowtest %s (commit %s)", b.Version, b.Commit)
	}
}
