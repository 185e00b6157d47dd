package preflight

// Preflight rules driven by the manifest's `needs`: the declaration decides, never the
// scenario id or series.

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/safety"
)

func item(id string, run bool, needs ...runner.Need) runner.Item {
	return runner.Item{Entry: runner.Entry{ID: id, Series: "s", Needs: needs}, Run: run, Feature: &runner.Feature{ID: id}}
}

func TestConfirmerCheckReadsNeeds(t *testing.T) {
	// Ids that the old hard-coded list knew are irrelevant: only the declaration counts.
	needs := []runner.Item{item("my-drill", true, runner.NeedConfirmer), item("plain", true)}
	plain := []runner.Item{item("m5-kill-unknown", true), item("plain", true)}

	c := ConfirmerCheck(safety.TargetLive, needs, "")
	assert.False(t, c.OK, "live, needs: [confirmer], no confirmer: refused")
	assert.Contains(t, c.Reason, "my-drill")
	assert.Contains(t, c.Reason, "named confirmer")

	c = ConfirmerCheck(safety.TargetLive, plain, "")
	assert.True(t, c.OK, "live, nothing needs a confirmer: not refused")
	assert.Contains(t, c.Reason, "no selected scenario needs a confirmer")

	assert.True(t, ConfirmerCheck(safety.TargetLive, needs, "alice").OK)
	assert.Contains(t, ConfirmerCheck(safety.TargetLive, needs, "alice").Reason, "alice")
	assert.True(t, ConfirmerCheck(safety.TargetSandbox, needs, "").OK, "the sandbox's scope principal confirms")

	// A scenario that needs a confirmer but is not selected does not count.
	assert.True(t, ConfirmerCheck(safety.TargetLive, []runner.Item{item("my-drill", false, runner.NeedConfirmer)}, "").OK)
}

func TestIODirCheckReadsNeeds(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	csv := []runner.Item{item("import", true, runner.NeedRequestApp, runner.NeedCSVIO)}

	cases := []struct {
		name   string
		target safety.Target
		items  []runner.Item
		dir    string
		ok     bool
		reason string
	}{
		{"no csv-io scenario", safety.TargetLive, []runner.Item{item("p", true, runner.NeedRequestApp)}, "", true, "no selected scenario needs csv-io"},
		{"sandbox", safety.TargetSandbox, csv, "", true, "sandbox"},
		{"unset", safety.TargetLive, csv, "", false, "import"},
		{"relative", safety.TargetLive, csv, "io", false, "not an absolute path"},
		{"missing", safety.TargetLive, csv, filepath.Join(dir, "missing"), false, "existing directory"},
		{"a file", safety.TargetLive, csv, file, false, "not a directory"},
		{"existing dir", safety.TargetLive, csv, dir, true, dir},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := IODirCheck(tc.target, tc.items, tc.dir, os.Stat)
			assert.Equal(t, tc.ok, c.OK, c.Reason)
			assert.Contains(t, c.Reason, tc.reason)
			assert.Equal(t, "KSQL_FLOWNET_IO_DIR", c.Subject)
		})
	}
}
