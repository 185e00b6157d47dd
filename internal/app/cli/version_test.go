package cli

import (
	"bytes"
	"runtime/debug"
	"testing"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/stretchr/testify/assert"
)

// `flowtest version` names the commit the binary was built from, says when its checkout had
// uncommitted changes, and says "commit unknown" for a binary built outside a checkout. The
// build info is injected: the test binary's own commit must not leak into the assertions.
func TestVersionPrintsTheBuildCommit(t *testing.T) {
	defer func(old func() (*debug.BuildInfo, bool)) { readBuildInfo = old }(readBuildInfo)
	for _, c := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"commit", &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "false"}}}, true,
			"flowtest " + Version + " (commit 0123abcd)\n"},
		{"modified", &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"}}}, true,
			"flowtest " + Version + " (commit 0123abcd, with uncommitted changes)\n"},
		{"outside a checkout", &debug.BuildInfo{}, true, "flowtest " + Version + " (commit unknown)\n"},
		{"no build info", nil, false, "flowtest " + Version + " (commit unknown)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			readBuildInfo = func() (*debug.BuildInfo, bool) { return c.info, c.ok }
			var out, errb bytes.Buffer
			assert.Equal(t, 0, Main([]string{"version"}, nil, &out, &errb, nil))
			assert.Equal(t, c.want, out.String())
			assert.Empty(t, errb.String())
		})
	}
	readBuildInfo = func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "feed"}, {Key: "vcs.modified", Value: "true"}}}, true
	}
	assert.Equal(t, &results.FlowtestBuild{Version: Version, Commit: "feed", Modified: true}, build())

	// Without Go's VCS stamp (a worktree, -buildvcs=false) the -ldflags commit names it.
	defer func(old string) { Commit = old }(Commit)
	Commit = "beef"
	readBuildInfo = func() (*debug.BuildInfo, bool) { return &debug.BuildInfo{}, true }
	assert.Equal(t, &results.FlowtestBuild{Version: Version, Commit: "beef"}, build())
}
