package requests

import (
	"context"
	"fmt"
	"github.com/ksqlflow/flowtest/internal/harness/schedule"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// pollerDomain: `poll-requests` as a real one-shot child process (the cron job of the
// product), named like every other process ("poller A"), with its allow-list made from the
// scenario's networks, its timing, and the counters line it prints. Several pollers may run
// at once; a claim race between two is forced with a fault-proxy barrier (proxy/faults.go) on one
// poller's claim, not hoped for.
type pollerDomain struct{}

func (d pollerDomain) register(reg stepdef.Registry) {
	reg.Step(`^network "([^"]+)" may be started from the request app$`, d.mayBeStarted)
	reg.Step(`^network "([^"]+)" is left out of the poller's allow-list$`, d.leftOut)
	reg.Step(`^the poller runs as "([^"]+)"$`, d.runs)
	reg.Step(`^the poller runs with heartbeat (\d+) ms and stale-after (\d+) ms as "([^"]+)"$`, d.runsWithTiming)
	reg.Step(`^the poller starts as "([^"]+)"$`, d.starts)
	reg.Step(`^the poller starts with heartbeat (\d+) ms and stale-after (\d+) ms as "([^"]+)"$`, d.startsWithTiming)
	reg.Step(`^the poller runs with the request token "([^"]+)" as "([^"]+)"$`, d.runsWithToken)
	reg.Step(`^the poller check runs with the request token "([^"]+)" as "([^"]+)"$`, d.checkWithToken)
	reg.Step(`^the poller check passes as "([^"]+)"$`, d.checkPasses)
	reg.Step(`^pollers "([^"]+)" and "([^"]+)" run at the same time$`, d.runTogether)
	reg.Step(`^"([^"]+)" counted ([a-z]+=\d+(?: [a-z]+=\d+)*)$`, d.counted)
	reg.Step(`^the claimed counts of "([^"]+)" and "([^"]+)" are (\d+) and (\d+) in some order$`, d.claimedCounts)
	reg.Step(`^the stderr of `+kit.ProcRef+` has a line starting with "([^"]*)"$`, d.stderrHasLine)
	reg.Step(`^the output of "([^"]+)" holds neither its request token nor the request's reason label$`, d.outputHoldsNoSecret)
}

// Poller timing of the original harness (scenarios.md §2.5): heartbeat 1000 ms, stale-after
// 5000 ms; the stale cases use 500 / 1000.
const (
	defaultPollHeartbeatMS = 1000
	defaultPollStaleMS     = 5000
)

// pollerState is the allow-list settings of the scenario's networks.
type pollerState struct {
	appStart map[string]bool // by rendered network id: app_start true
	leftOut  map[string]bool // by rendered network id: not in the allow-list
}

var pollerKey = scenario.NewKey[pollerState]("pollers")

func pollersOf(ctx context.Context) *pollerState { return pollerKey.Of(scenario.From(ctx)) }

func (pollerDomain) mayBeStarted(ctx context.Context, label string) error {
	return markNetwork(ctx, label, &pollersOf(ctx).appStart)
}

func (pollerDomain) leftOut(ctx context.Context, label string) error {
	return markNetwork(ctx, label, &pollersOf(ctx).leftOut)
}

// markNetwork sets a labelled network's flag in one of the allow-list settings.
func markNetwork(ctx context.Context, label string, set *map[string]bool) error {
	n, err := kit.FixturesOf(ctx).NetworkOf(`network "` + label + `"`)
	if err != nil {
		return err
	}
	if *set == nil {
		*set = map[string]bool{}
	}
	(*set)[n.NetworkID] = true
	return nil
}

// allowEntry is one networks[] entry of the poller's allow-list (product-contract §1.10).
type allowEntry struct {
	NetworkID      string `yaml:"network_id"`
	DefinitionPath string `yaml:"definition_path"`
	AppStart       bool   `yaml:"app_start"`
}

// writeAllowlist writes the allow-list of every network the scenario rendered (but those
// left out) for one poller, and returns its absolute path and its number of networks.
func writeAllowlist(ctx context.Context, name string) (string, int, error) {
	sc, ps := kit.SceneOf(ctx), pollersOf(ctx)
	var entries []allowEntry
	for _, n := range kit.FixturesOf(ctx).Networks() {
		if ps.leftOut[n.NetworkID] {
			continue
		}
		entries = append(entries, allowEntry{NetworkID: n.NetworkID, DefinitionPath: n.Path, AppStart: ps.appStart[n.NetworkID]})
	}
	// The current network comes first in networks(); the allow-list's order does not
	// matter to the poller, and a stable one keeps the files comparable.
	sort.Slice(entries, func(i, j int) bool { return entries[i].NetworkID < entries[j].NetworkID })
	if len(entries) == 0 {
		return "", 0, fmt.Errorf("the poller's allow-list would be empty: render a network fixture first")
	}
	data, err := yaml.Marshal(map[string]any{"networks": entries})
	if err != nil {
		return "", 0, err
	}
	dir := filepath.Join(sc.St.WorkDir, "allowlists")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", 0, err
	}
	path, err := filepath.Abs(filepath.Join(dir, kit.ProcFileName(name)+".yaml"))
	if err != nil {
		return "", 0, err
	}
	return path, len(entries), os.WriteFile(path, data, 0o600)
}

// pollerSpec is how one poller is started.
type pollerSpec struct {
	name                 string
	heartbeatMS, staleMS int
	check                bool
	token                string   // a request token of the scenario's own ("" = the target's)
	extraEnv             []string // e.g. the base URL of a fault proxy
	networks             int      // set by startPoller: the allow-list's size
	allowlist            string
}

// startPoller starts `poll-requests [--check]` through the one FlowNet command runner.
func startPoller(ctx context.Context, p *pollerSpec) (*kit.FlownetCall, error) {
	if p.heartbeatMS == 0 {
		p.heartbeatMS, p.staleMS = defaultPollHeartbeatMS, defaultPollStaleMS
	}
	path, n, err := writeAllowlist(ctx, p.name)
	if err != nil {
		return nil, err
	}
	p.allowlist, p.networks = path, n
	env := []string{
		"KSQL_FLOWNET_REQUEST_ALLOWLIST_PATH=" + path,
		"KSQL_FLOWNET_REQUEST_HEARTBEAT_INTERVAL_MS=" + strconv.Itoa(p.heartbeatMS),
		"KSQL_FLOWNET_REQUEST_STALE_AFTER_MS=" + strconv.Itoa(p.staleMS),
	}
	if p.token != "" {
		if r := kit.SceneOf(ctx).Suite.Redact; r != nil {
			r.AddSecret("FLOWTEST_SCENARIO_REQUEST_TOKEN", p.token)
		}
		env = append(env, "KSQL_FLOWNET_REQUEST_API_TOKEN="+p.token)
	}
	var args []string
	if p.check {
		args = []string{"--check"}
	}
	return kit.StartFlowNet(ctx, kit.FlownetSpec{Name: p.name, Sub: "poll-requests", Args: args, Env: env})
}

// runPoller starts a poller and waits for it to end.
func runPoller(ctx context.Context, p *pollerSpec) (*kit.FlownetCall, error) {
	c, err := startPoller(ctx, p)
	if err != nil {
		return nil, err
	}
	return c, c.Finish(ctx)
}

func (pollerDomain) runs(ctx context.Context, name string) error {
	_, err := runPoller(ctx, &pollerSpec{name: name})
	return err
}

func (pollerDomain) runsWithTiming(ctx context.Context, hb, stale int, name string) error {
	_, err := runPoller(ctx, &pollerSpec{name: name, heartbeatMS: hb, staleMS: stale})
	return err
}

func (pollerDomain) starts(ctx context.Context, name string) error {
	_, err := startPoller(ctx, &pollerSpec{name: name})
	return err
}

func (pollerDomain) startsWithTiming(ctx context.Context, hb, stale int, name string) error {
	_, err := startPoller(ctx, &pollerSpec{name: name, heartbeatMS: hb, staleMS: stale})
	return err
}

func (pollerDomain) runsWithToken(ctx context.Context, token, name string) error {
	_, err := runPoller(ctx, &pollerSpec{name: name, token: token})
	return err
}

func (pollerDomain) checkWithToken(ctx context.Context, token, name string) error {
	_, err := runPoller(ctx, &pollerSpec{name: name, token: token, check: true})
	return err
}

// checkPasses: `poll-requests --check` validates the allow-list and every definition it
// names and reads the request app: it names as many networks as the allow-list holds.
func (pollerDomain) checkPasses(ctx context.Context, name string) error {
	sc := kit.SceneOf(ctx)
	p := &pollerSpec{name: name, check: true}
	c, err := runPoller(ctx, p)
	if err != nil {
		return err
	}
	if err := sc.St.On("exit.poll-requests").Equal("exit code of "+name, 0, c.Result.ExitCode); err != nil {
		return fmt.Errorf("%w\nstderr: %s", err, c.Stderr)
	}
	want := fmt.Sprintf("poll-requests check: ok networks=%d request_app=readable", p.networks)
	return sc.St.On("text.poll-requests:\"poll-requests check: ok \"").Equal("stdout of "+name, want, strings.TrimSpace(c.Stdout))
}

// runTogether starts two pollers back to back and waits for both.
func (pollerDomain) runTogether(ctx context.Context, a, b string) error {
	ca, err := startPoller(ctx, &pollerSpec{name: a})
	if err != nil {
		return err
	}
	cb, err := startPoller(ctx, &pollerSpec{name: b})
	if err != nil {
		return err
	}
	if err := ca.Finish(ctx); err != nil {
		return err
	}
	return cb.Finish(ctx)
}

// counters parses the poller's counters line:
// `poll-requests: requested=<n> claimed=<n> completed=<n> cancelled=<n> invalid=<n> stale=<n> skipped=<n>`.
var countersLine = regexp.MustCompile(`(?m)^poll-requests: ((?:[a-z]+=\d+ ?)+)$`)

func counters(c *kit.FlownetCall) (map[string]int, error) {
	m := countersLine.FindStringSubmatch(c.Stdout)
	if m == nil {
		return nil, fmt.Errorf("%s printed no counters line (exit %s); stdout: %q; stderr: %s", c.Name, c.Result, c.Stdout, c.Stderr)
	}
	out := map[string]int{}
	for _, kv := range strings.Fields(m[1]) {
		k, v, _ := strings.Cut(kv, "=")
		out[k], _ = strconv.Atoi(v)
	}
	return out, nil
}

func finishedPoller(ctx context.Context, name string) (*kit.FlownetCall, error) {
	call, err := kit.FinishedCall(ctx, name)
	if err != nil {
		return nil, err
	}
	if call.Sub != "poll-requests" {
		return nil, fmt.Errorf("%q is a FlowNet %s call, not a poller", name, call.Sub)
	}
	return call, nil
}

// counted compares the named counters, in the order written.
func (pollerDomain) counted(ctx context.Context, name, list string) error {
	sc := kit.SceneOf(ctx)
	c, err := finishedPoller(ctx, name)
	if err != nil {
		return err
	}
	got, err := counters(c)
	if err != nil {
		return err
	}
	for _, kv := range strings.Fields(list) {
		k, v, _ := strings.Cut(kv, "=")
		seen, ok := got[k]
		if !ok {
			return fmt.Errorf("the counters line of %s has no %s: %s", name, k, strings.TrimSpace(countersLine.FindString(c.Stdout)))
		}
		if err := sc.St.On("text.poll-requests:\"poll-requests: requested=\"").Equal(k+"= counted by "+name, v, strconv.Itoa(seen)); err != nil {
			return err
		}
	}
	return nil
}

func (pollerDomain) claimedCounts(ctx context.Context, a, b string, x, y int) error {
	var got []int
	for _, name := range []string{a, b} {
		c, err := finishedPoller(ctx, name)
		if err != nil {
			return err
		}
		n, err := counters(c)
		if err != nil {
			return err
		}
		got = append(got, n["claimed"])
	}
	// Which poller won: `flowtest explore` counts the branches.
	kit.SceneOf(ctx).St.Note(schedule.BranchNote, fmt.Sprintf("%s claimed %d, %s claimed %d", a, got[0], b, got[1]))
	want := []int{x, y}
	sort.Ints(got)
	sort.Ints(want)
	return kit.SceneOf(ctx).St.On("text.poll-requests:\"poll-requests: requested=\"").Equal(fmt.Sprintf("claimed= of %s and %s, sorted", a, b), fmt.Sprint(want), fmt.Sprint(got))
}

func (pollerDomain) stderrHasLine(ctx context.Context, ref, prefix string) error {
	return kit.HasLineStarting(ctx, ref, "stderr", prefix)
}

// outputHoldsNoSecret: neither the request token the poller was given nor the reason label
// (nor the reason body) of the scenario's request may appear in what it printed. The values
// themselves are never reported, only where one was found.
func (pollerDomain) outputHoldsNoSecret(ctx context.Context, name string) error {
	c, err := finishedPoller(ctx, name)
	if err != nil {
		return err
	}
	m, err := requestsOf(ctx).find("the request")
	if err != nil {
		return err
	}
	secrets := map[string]string{"request token": c.EnvValue("KSQL_FLOWNET_REQUEST_API_TOKEN"), "reason label": m.label, "reason body": m.reason}
	var found []string
	for _, what := range []string{"request token", "reason label", "reason body"} {
		v := secrets[what]
		if v == "" {
			return fmt.Errorf("%s of %s is empty: nothing to look for", what, name)
		}
		for stream, text := range map[string]string{"stdout": c.Stdout, "stderr": c.Stderr} {
			if strings.Contains(text, v) {
				found = append(found, what+" in "+stream)
			}
		}
	}
	sort.Strings(found)
	return kit.SceneOf(ctx).St.On("process.output.secrets").Equal("secrets in the output of "+name+" (request token, reason label, reason body)", kit.OrNone(""), kit.OrNone(strings.Join(found, ", ")))
}
