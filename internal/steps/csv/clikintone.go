package csv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// cliKintoneDomain: the real cli-kintone (`tools/cli-kintone`, blocked without Node.js)
// importing an exported file into the CSV fixture app, with the app's token in its
// environment only, and that token absent from its output.
type cliKintoneDomain struct{}

func (d cliKintoneDomain) register(reg stepdef.Registry) {
	reg.Step(`^cli-kintone imports the exported "([^"]+)" file into the CSV fixture app with --update-key test_key as "([^"]+)"$`, d.cliKintoneImports)
	reg.Step(`^the output of "([^"]+)" holds no API token$`, d.outputHoldsNoToken)
}

const kindCLIKintone = "cli-kintone"

// cliKintone finds the real cli-kintone: tools/cli-kintone/node_modules/.bin (installed,
// pinned, by `make cli-kintone`), else cli-kintone on PATH; Node.js must be on PATH too.
func cliKintone(sc *kit.Scene) (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", scenario.Blocked("cli-kintone unavailable: Node.js is not on PATH (cli-kintone 1.19.2 needs Node.js >= 20; then make cli-kintone)")
	}
	name := "cli-kintone"
	if runtime.GOOS == "windows" {
		name += ".cmd"
	}
	local := filepath.Join(filepath.Dir(filepath.Dir(sc.Suite.FixturesDir)), "tools", "cli-kintone", "node_modules", ".bin", name)
	if _, err := os.Stat(local); err == nil {
		return local, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", scenario.Blocked("cli-kintone unavailable: not installed (make cli-kintone installs the pinned @kintone/cli into tools/cli-kintone with npm ci)")
}

// cliKintoneImports runs `cli-kintone record import` on the artefact, exactly as exported,
// against the target's CSV fixture app, with the app's token in KINTONE_API_TOKEN (never
// on the command line) and the emulator's CA in NODE_EXTRA_CA_CERTS.
func (cliKintoneDomain) cliKintoneImports(ctx context.Context, sink, name string) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	file := csvExportKey.Of(sc.St).exported(sink)
	if file == "" {
		return fmt.Errorf("no exported %s file was located yet", sink)
	}
	bin, err := cliKintone(sc)
	if err != nil {
		return err
	}
	t := sc.Suite.Target
	a, err := t.App(target.RoleCSV)
	if err != nil {
		return err
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + sc.St.WorkDir, "KINTONE_API_TOKEN=" + a.Token("full"), "NO_COLOR=1"}
	if t.CAFile != "" {
		env = append(env, "NODE_EXTRA_CA_CERTS="+t.CAFile)
	}
	if sr := os.Getenv("SYSTEMROOT"); sr != "" {
		env = append(env, "SYSTEMROOT="+sr)
	}
	np := &kit.NamedProc{Name: name, Kind: kindCLIKintone, Scope: fx.Scope()}
	if err := kit.StartChild(ctx, np, proc.Spec{Path: bin, Args: []string{"record", "import", "--base-url", t.BaseURL, "--app", a.ID,
		"--file-path", file, "--update-key", "test_key", "--fields", "test_key,test_value", "--encoding", "utf8"}, Env: env, Dir: sc.St.WorkDir}); err != nil {
		return err
	}
	res, err := kit.WaitExit(ctx, name, np.Proc)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		stderr, _ := np.Proc.Stderr()
		return sc.St.On("process.cli-kintone.exit-code").Equal("exit code of "+name, 0, fmt.Sprintf("%d: %s", res.ExitCode, kit.FirstLineOrNone(stderr)))
	}
	return sc.St.On("process.cli-kintone.exit-code").Equal("exit code of "+name, 0, res.ExitCode)
}

func (cliKintoneDomain) outputHoldsNoToken(ctx context.Context, name string) error {
	sc := kit.SceneOf(ctx)
	p, err := kit.ProcessesOf(ctx).Resolve(`"` + name + `"`)
	if err != nil {
		return err
	}
	out, _ := p.Proc.Stdout()
	errOut, _ := p.Proc.Stderr()
	tok := sc.Suite.Target.Apps[target.RoleCSV].Token("full")
	found := "no"
	if tok != "" && strings.Contains(out+errOut, tok) {
		found = "yes"
	}
	return sc.St.On("process.cli-kintone.output").Equal("the CSV app token in the output of "+name, "no", found)
}
