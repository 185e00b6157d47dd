package target

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSatisfiesEngines(t *testing.T) {
	for _, c := range []struct {
		version, engines string
		want             bool
	}{
		{"22.23.5", ">=22.0.0", true},
		{"22.0.0", ">=22.0.0", true},
		{"20.20.2", ">=22.0.0", false},
		{"21.99.99", ">=22", false},
		{"23.1.0", ">= 22.5", true},
		{"22.4.9", ">=22.5", false},
		{"18.0.0", "", true},
	} {
		got, err := SatisfiesEngines(c.version, c.engines)
		require.NoError(t, err, c)
		require.Equal(t, c.want, got, "%s against %q", c.version, c.engines)
	}
	_, err := SatisfiesEngines("22.0.0", "^22 || ^24")
	require.ErrorContains(t, err, "only a lower bound")
	_, err = SatisfiesEngines("v22", ">=22")
	require.ErrorContains(t, err, "not X.Y.Z")
}

// fakeProduct writes a FlowNet build and a node that reports version, and returns the tools
// folder that holds them as make flownet would.
func fakeProduct(t *testing.T, nodeVersion string) (tools, node string) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake node is a shell script")
	}
	tools = t.TempDir()
	pkg := filepath.Join(tools, "flownet", "node_modules", "@rex0220", "ksql-flownet")
	require.NoError(t, os.MkdirAll(filepath.Join(pkg, "dist", "cli"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"@rex0220/ksql-flownet","version":"1.0.0","engines":{"node":">=22.0.0"}}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "dist", "cli", "index.js"), []byte("\n"), 0o644))
	node = filepath.Join(t.TempDir(), "node")
	require.NoError(t, os.WriteFile(node, []byte("#!/bin/sh\necho v"+nodeVersion+"\n"), 0o755))
	return tools, node
}

func TestResolveProduct(t *testing.T) {
	ctx := context.Background()
	tools, node22 := fakeProduct(t, "22.23.5")
	_, node20 := fakeProduct(t, "20.20.2")

	p, err := ResolveProduct(ctx, ProductOptions{Choice: ProductReal, Tools: tools, Node: node22})
	require.NoError(t, err)
	require.True(t, p.Real)
	require.Equal(t, "pinned", p.Source)
	require.Equal(t, "1.0.0", p.Version)
	require.Equal(t, "22.23.5", p.NodeVersion)
	cmd := p.Command("/bin/flowsandbox")
	require.Equal(t, node22, cmd.Path)
	require.Equal(t, []string{filepath.Join(p.Dir, "dist", "cli", "index.js")}, cmd.Args)

	// A Node its engines refuse: real is blocked, auto falls back to the reference and says why.
	_, err = ResolveProduct(ctx, ProductOptions{Choice: ProductReal, Tools: tools, Node: node20})
	require.ErrorIs(t, err, ErrProductBlocked)
	require.ErrorContains(t, err, "needs node >=22.0.0")
	p, err = ResolveProduct(ctx, ProductOptions{Choice: ProductAuto, Tools: tools, Node: node20})
	require.NoError(t, err)
	require.False(t, p.Real)
	require.Contains(t, p.Fallback, "20.20.2")
	require.Equal(t, []string{"flownet"}, p.Command("/bin/flowsandbox").Args)

	// Not installed: the same.
	empty := t.TempDir()
	_, err = ResolveProduct(ctx, ProductOptions{Choice: ProductReal, Tools: empty, Node: node22})
	require.True(t, errors.Is(err, ErrProductBlocked), "%v", err)
	require.ErrorContains(t, err, "make flownet")
	p, err = ResolveProduct(ctx, ProductOptions{Tools: empty, Node: node22})
	require.NoError(t, err)
	require.False(t, p.Real)

	// A build by path; a folder that is not one is an error, not a fallback.
	p, err = ResolveProduct(ctx, ProductOptions{Choice: filepath.Join(tools, "flownet", "node_modules", "@rex0220", "ksql-flownet"), Node: node22})
	require.NoError(t, err)
	require.Equal(t, "path", p.Source)
	_, err = ResolveProduct(ctx, ProductOptions{Choice: empty, Node: node22})
	require.ErrorContains(t, err, "not a kSQL-FlowNet build")
	require.False(t, errors.Is(err, ErrProductBlocked))

	require.Equal(t, Reference, must(ResolveProduct(ctx, ProductOptions{Choice: ProductReference})))
}

func must(p Product, err error) Product {
	if err != nil {
		panic(err)
	}
	return p
}
