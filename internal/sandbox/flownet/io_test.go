package flownet

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExpandIOPath(t *testing.T) {
	vals := map[string]string{"business_key": "a/b ..", "profile": "..", "run_id": "r"}
	p, err := expandIOPath("/io/in", "csv/{business_key}/x.csv", vals)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("/io/in", "csv", "a%2Fb%20..", "x.csv"), p, "a placeholder value is one percent-encoded segment")
	for _, bad := range []string{"/abs.csv", "../x.csv", "a/./b.csv", "a//b.csv", "{unknown}.csv", "a\x00b", `a\b.csv`, "{profile}/x.csv", ""} {
		_, err := expandIOPath("/io/in", bad, vals)
		assert.Equal(t, codeInputPathRejected, errCode(err, ""), "template %q", bad)
	}
}

func TestResolveInputsLinksAndMissing(t *testing.T) {
	io := t.TempDir()
	outside := t.TempDir()
	nd := Node{ID: "n", Inputs: map[string]string{"source": "csv1/{business_key}/input.csv"}}
	vals := map[string]string{"business_key": "k"}

	_, err := resolveInputs(io, nd, vals)
	assert.Equal(t, codeInputFileMissing, errCode(err, ""))

	require.NoError(t, os.MkdirAll(filepath.Join(io, "in", "csv1", "k"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(io, "in", "csv1", "k", "input.csv"), []byte("a\r\n"), 0o600))
	ins, err := resolveInputs(io, nd, vals)
	require.NoError(t, err)
	assert.Len(t, ins[0].SHA256, 64)
	assert.EqualValues(t, 3, ins[0].Bytes)

	if runtime.GOOS == "windows" {
		t.Skip("directory symlinks need a privilege on Windows")
	}
	require.NoError(t, os.RemoveAll(filepath.Join(io, "in", "csv1")))
	require.NoError(t, os.MkdirAll(filepath.Join(outside, "k"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "k", "input.csv"), []byte("a\r\n"), 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(io, "in", "csv1")))
	_, err = resolveInputs(io, nd, vals)
	assert.Equal(t, codeInputPathRejected, errCode(err, ""), "a link out of the IO root")
}

func TestResolveOutputsStayUnderOut(t *testing.T) {
	io := t.TempDir()
	nd := Node{ID: "n", Outputs: map[string]string{"report": "csv2/{run_id}/{node_id}/report.csv"}}
	outs, err := resolveOutputs(io, nd, map[string]string{"run_id": "r 1", "node_id": "n"})
	require.NoError(t, err)
	real, err := filepath.EvalSymlinks(filepath.Join(io, "out"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(real, "csv2", "r%201", "n", "report.csv"), outs[0].Path)
	_, err = resolveOutputs(io, Node{ID: "n", Outputs: map[string]string{"report": "../x.csv"}}, nil)
	assert.Equal(t, codeOutputPathRejected, errCode(err, ""))
}
