package flagcheck

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/base/refusal"
)

func TestLastIsTheValueThatCounts(t *testing.T) {
	assert.Equal(t, "@m6", Use{Values: []string{"@m5", "@m6"}}.Last())
	assert.Equal(t, "", Use{}.Last())
}

func TestOnceRefusesARepeatedFlagUnlessRepeatable(t *testing.T) {
	uses := map[string]Use{"tags": {Values: []string{"@a", "@b"}}, "format": {Values: []string{"x", "y"}}, "out": {Values: []string{"o"}}}
	err := Once(uses, "format")
	var rep Repeated
	require.True(t, errors.As(err, &rep), "got %v", err)
	assert.Equal(t, "tags", rep.Name)
	assert.EqualError(t, err, `--tags given 2 times ("@a", "@b")`)
	assert.NoError(t, Once(uses, "format", "tags"))
	// In name order: the same flag is named whatever the map's order.
	uses["delete"] = Use{Values: []string{"true", "true"}}
	for range 5 {
		require.True(t, errors.As(Once(uses), &rep))
		assert.Equal(t, "delete", rep.Name)
	}
}

func TestPathRulesRefuse(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o600))

	for _, c := range []struct {
		err  error
		want string
	}{
		{ExistingFile("--env-file", file), ""},
		{ExistingFile("--env-file", " "), `--env-file " ": empty path`},
		{ExistingFile("--env-file", filepath.Join(dir, "none")), `: no such file`},
		{ExistingFile("--env-file", dir), `: a directory, not a file`},
		{ExistingDir("--features", dir, "the features"), ""},
		{ExistingDir("--features", "", "the features"), `--features "": empty path (the features)`},
		{ExistingDir("--features", file, "the features"), `: not a directory (the features)`},
		{CreatableDir("--out", dir), ""},
		{CreatableDir("--out", filepath.Join(dir, "a", "b")), ""},
		{CreatableDir("--out", ""), `--out "": empty path`},
		{CreatableDir("--out", file), `: a file, not a directory`},
		{CreatableDir("--out", filepath.Join(file, "sub")), `: cannot be created: ` + file + ` is a file`},
		{CreatableFile("--out", filepath.Join(dir, "a", "ev.md")), ""},
		{CreatableFile("--out", file), ""},
		{CreatableFile("--out", " "), `--out " ": empty path`},
		{CreatableFile("--out", dir), `: a directory, not a file`},
		{CreatableFile("--out", filepath.Join(file, "ev.md")), `--out "` + filepath.Join(file, "ev.md") + `": cannot be created: ` + file + ` is a file`},
		{CreatableFile("--out", filepath.Join(file, "x", "ev.md")), `: cannot be created: ` + file + ` is a file`},
	} {
		if c.want == "" {
			assert.NoError(t, c.err)
			continue
		}
		require.Error(t, c.err, c.want)
		assert.Contains(t, c.err.Error(), c.want)
		assert.True(t, refusal.Is(c.err), "%v is a refusal", c.err)
	}
	_, err := os.Stat(filepath.Join(dir, "a"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the check creates nothing")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "the probe file is removed")

	if runtime.GOOS != "windows" && os.Getuid() != 0 {
		ro := filepath.Join(dir, "ro")
		require.NoError(t, os.Mkdir(ro, 0o500))
		err := CreatableDir("--out", filepath.Join(ro, "new"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "(its nearest existing parent "+ro+") is not writable")
		err = CreatableFile("--out", filepath.Join(ro, "ev.md"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), ro+" is not writable")
	}
}

// A file written into a folder the command reads would change its own input: refused,
// also through a link and for the folder itself.
func TestNotInsideRefusesAnOutputInsideAnInput(t *testing.T) {
	root := t.TempDir()
	in := filepath.Join(root, "archive")
	require.NoError(t, os.MkdirAll(filepath.Join(in, "logs"), 0o755))
	link := filepath.Join(root, "latest")
	require.NoError(t, os.Symlink(in, link))
	for _, c := range []struct {
		out  string
		want string
	}{
		{filepath.Join(root, "archive.tar.gz"), ""},
		{filepath.Join(root, "archive-2", "x"), ""},
		{in, `--out "` + in + `": inside the archive being packed ` + in + `; write it elsewhere`},
		{filepath.Join(in, "self.tar.gz"), `: inside the archive being packed`},
		{filepath.Join(in, "new", "deeper", "x"), `: inside the archive being packed`},
		{filepath.Join(link, "logs", "x"), `: inside the archive being packed`},
		{filepath.Join(in, "..", "archive", "x"), `: inside the archive being packed`},
	} {
		err := NotInside("--out", c.out, []string{in}, "the archive being packed")
		if c.want == "" {
			assert.NoError(t, err, c.out)
			continue
		}
		require.Error(t, err, c.out)
		assert.Contains(t, err.Error(), c.want)
		assert.True(t, refusal.Is(err))
	}
	assert.Error(t, NotInside("--out", filepath.Join(in, "x"), []string{link}, "an input"), "the input given through a link")
}
