package preflight

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/config"
	"github.com/ksqlflow/flowtest/internal/harness/scope"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// validateFixture is the network the launchers are asked to validate: the suite's most used
// one (m5-serial-success and the request series), three nodes reading both business apps.
const validateFixture = "network-success.yaml"

// probeFixture is a copy of validateFixture and its SQL files from features/fixtures, built
// into flowtest so that the probe does not depend on the working directory or --features (a
// rehearsal runs flowtest in the operator's directory); TestProbeFixtureIsTheSuites keeps the
// copy byte-equal to the suite's.
//
//go:embed probefixture
var probeFixture embed.FS

// validateChecks render validateFixture (probeFixture), with a throw-away scope and exactly
// as the suite renders it (internal/harness/scope), into a temporary directory, then ask FlowNet `validate
// <network>` (product-contract §1.1: read-only; stdout "Valid network definition: <path>",
// exit 0) and kSQL-Flow `validate -f <sql> --profile <p> --config <c>` for each of its SQL
// files (§7: exit 0/1; the pre-step operators run, scenarios.md M5). kSQL-Flow gets the
// environment the run gives it (its config's env: tokens), so a kSQL-Flow that resolves them
// while validating behaves as in the run. Nothing reaches the tenant from flowtest; the
// rendered files are removed. A launcher whose start check failed is not asked again.
func validateChecks(cfg *config.Config, flowNetOK, ksqlFlowOK bool) []safety.Check {
	fn := safety.Check{Name: "flownet-validate", Subject: validateFixture, OK: true}
	kf := safety.Check{Name: "ksql-flow-validate", Subject: validateFixture, OK: true}
	fail := func(reason string) []safety.Check {
		fn.OK, fn.Reason, kf.OK, kf.Reason = false, reason, false, reason
		return []safety.Check{fn, kf}
	}
	tmp, err := os.MkdirTemp("", "flowtest-validate-")
	if err != nil {
		return fail("not probed: " + err.Error())
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "fixtures")
	if err := writeProbeFixture(src); err != nil {
		return fail("not probed: " + err.Error())
	}
	sc, err := scope.New("preflight_validate", time.Now(), nil)
	if err != nil {
		return fail("not probed: " + err.Error())
	}
	r, err := sc.Render(filepath.Join(src, "networks", validateFixture), filepath.Join(tmp, "rendered"), scope.RenderOptions{})
	if err != nil {
		return fail(fmt.Sprintf("not probed: render %s: %v", validateFixture, err))
	}
	if flowNetOK {
		fn = flowNetValidateCheck(cfg, fn, r.Path)
	} else {
		fn.OK, fn.Reason = false, "not probed: the FlowNet CLI does not answer (flownet-launcher)"
	}
	if ksqlFlowOK {
		kf = ksqlFlowValidateCheck(cfg, kf, r)
	} else {
		kf.OK, kf.Reason = false, "not probed: kSQL-Flow does not answer (ksql-flow-launcher)"
	}
	return []safety.Check{fn, kf}
}

func flowNetValidateCheck(cfg *config.Config, c safety.Check, network string) safety.Check {
	bin, args, dir, err := cfg.FlowNetCommand()
	if err != nil {
		c.OK, c.Reason = false, err.Error()
		return c
	}
	out, err := probe(bin, append(args, "validate", network), dir, cfg.Get(config.VarCAFile))
	if err != nil {
		c.OK, c.Reason = false, "the FlowNet CLI refused a rendered fixture: "+err.Error()
		return c
	}
	if line := shortFirstLine(string(out)); !strings.HasPrefix(line, "Valid network definition") {
		c.OK, c.Reason = false, fmt.Sprintf("`validate <network>` exited 0 without \"Valid network definition: <path>\" (printed %q)", line)
		return c
	}
	c.Reason = "a rendered copy is a valid network definition"
	return c
}

func ksqlFlowValidateCheck(cfg *config.Config, c safety.Check, r scope.Rendered) safety.Check {
	conf := cfg.FlowConfig()
	if conf == "" {
		c.OK, c.Reason = false, "not probed: "+config.VarFlowConfig+" is not set (ksql-flow-config)"
		return c
	}
	args, err := cfg.FlowBinArgs()
	if err != nil {
		c.OK, c.Reason = false, err.Error()
		return c
	}
	var env []string
	for _, n := range target.KsqlFlowEnvNames(cfg.Get(safety.VarAppCSV) != "") {
		if v := cfg.Get(n); v != "" {
			env = append(env, n+"="+v)
		}
	}
	for _, node := range r.Nodes {
		_, err := probe(cfg.Get(config.VarFlowBin), append(args, "validate", "-f", node.SQL, "--profile", cfg.Profile(), "--config", conf),
			"", cfg.Get(config.VarCAFile), env...)
		if err != nil {
			c.OK, c.Reason = false, fmt.Sprintf("kSQL-Flow refused the rendered SQL of node %s: %v", node.FixtureID, err)
			return c
		}
	}
	c.Reason = fmt.Sprintf("%d rendered SQL files validate with profile %q", len(r.Nodes), cfg.Profile())
	return c
}

// writeProbeFixture copies probeFixture to dir (networks/, jobs/), as the suite's fixtures
// directory is laid out: the network names its SQL files as ../jobs/<file>.
func writeProbeFixture(dir string) error {
	return fs.WalkDir(probeFixture, "probefixture", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(p, "probefixture")))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := probeFixture.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
}
