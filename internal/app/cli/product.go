package cli

import (
	"context"
	"os"
	"path/filepath"

	"github.com/ksqlflow/flowtest/internal/harness/config"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/results"
)

// product resolves --product (FLOWTEST_PRODUCT) for a sandbox run: which FlowNet its
// scenarios drive. An explicit real product that cannot run here is refused before anything
// starts, with the word "blocked" and the reason; auto falls back to the reference and the
// console, run.json and the record say so.
func (s *session) product(ctx context.Context) (target.Product, error) {
	return target.ResolveProduct(ctx, target.ProductOptions{
		Choice: s.cfg.Get(config.VarProduct), Node: s.cfg.Get(config.VarNode), Tools: s.toolsDir(),
	})
}

// toolsDir is the repository's tools folder, where make installs the pinned npm tools: beside
// the features folder, else beside the folder of the flowtest binary (bin/..).
func (s *session) toolsDir() string {
	var candidates []string
	if abs, err := filepath.Abs(s.flags.features); err == nil {
		candidates = append(candidates, filepath.Join(filepath.Dir(abs), "tools"))
	}
	if self, err := os.Executable(); err == nil {
		candidates = append(candidates, filepath.Join(filepath.Dir(filepath.Dir(self)), "tools"))
	}
	for _, c := range candidates {
		if _, err := os.Stat(filepath.Join(c, "flownet", "package.json")); err == nil {
			return c
		}
	}
	if len(candidates) > 0 {
		return candidates[0]
	}
	return "tools"
}

// productRecord is the run.json form of the product the target drives. A live target drives
// the FlowNet its FLOWTEST_FLOWNET_DIR names: a real product given by path.
func productRecord(t *target.Target) *results.Product {
	p := t.Product
	if t.Name == "live" {
		return &results.Product{Kind: results.ProductReal, Source: "path", Package: p.Package, Version: p.Version, Node: p.NodeVersion}
	}
	if !p.Real {
		return &results.Product{Kind: results.ProductReference, Source: "sandbox"}
	}
	return &results.Product{Kind: results.ProductReal, Source: p.Source, Package: p.Package, Version: p.Version, Node: p.NodeVersion}
}
