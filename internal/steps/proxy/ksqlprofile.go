package proxy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ksqlflow/flowtest/internal/harness/ksqlprofile"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// The steps learn the kSQL-Flow profile from `describe-profile --json` (product-contract §7),
// not from the config file, whose format the contract does not fix; and a proxy's config copy
// changes the profile's base URL only, proven here for every copy a scenario writes.

// DescribeProfile is describe-profile of the target's profile in config, run as the
// scenario's kSQL-Flow children run (the target's base environment and kSQL-Flow's tokens).
func DescribeProfile(ctx context.Context, sc *kit.Scene, config string) (*ksqlprofile.Description, error) {
	t := sc.Suite.Target
	dir := filepath.Join(sc.St.WorkDir, "describe-profile")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	l := ksqlprofile.Launcher{Path: t.KsqlFlow.Path, Args: t.KsqlFlow.Args, Dir: dir,
		Env: append(append([]string(nil), t.BaseEnv...), t.KsqlFlowEnv()...)}
	return ksqlprofile.Describe(ctx, l, t.Profile, config)
}

// proxiedConfig writes dir/ksql-flow-config.json, the operator's kSQL-Flow config with the
// profile's base URL set to proxyURL, and proves it: the files differ in that key only, and
// describe-profile of the copy equals orig (the original's description) but for its baseUrl.
// The proxy's CA reaches the children through NODE_EXTRA_CA_CERTS, never through the file.
func proxiedConfig(ctx context.Context, sc *kit.Scene, orig *ksqlprofile.Description, dir, proxyURL string) (string, error) {
	t := sc.Suite.Target
	path := filepath.Join(dir, "ksql-flow-config.json")
	describe := func(config string) (*ksqlprofile.Description, error) { return DescribeProfile(ctx, sc, config) }
	if err := ksqlprofile.WriteProvenCopy(t.KsqlFlowConfig, path, t.Profile, proxyURL, orig, describe); err != nil {
		return "", err
	}
	sc.St.Note("kSQL-Flow config copy", fmt.Sprintf("%s: only %s changed (to the proxy); describe-profile agrees", filepath.Base(dir)+"/"+filepath.Base(path), ksqlprofile.DocumentedChange(t.Profile)))
	return path, nil
}
