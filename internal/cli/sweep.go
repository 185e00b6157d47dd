package cli

// flowtest sweep: what runs that died before their cleanup left on the target. A scope's
// records are leftovers when its scope belongs to no live runner and is older than
// --older-than; they are listed per scope and app and, with --delete, removed by the
// per-scenario cleanup itself (harness/kintone SweepScope for the state and audit apps,
// SweepRequests for the request app: the reason-prefix rule), through the guarded client
// and after the same safety preflight as run. The JOB log is never read for it nor written:
// the client has no token for it and the guard refuses it by role.
//
// Which runners are live is known on this machine only: from the work dirs of live runs
// (harness/workdir: owner pid and start, and the scopes they prepared). A scope made after
// the oldest live runner here started is left alone too (it could be a sub-scope made by
// that runner mid-scenario). A runner on another machine is protected by --older-than
// alone: keep it longer than the longest run.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	hkintone "github.com/ksqlflow/flowtest/harness/kintone"
	"github.com/ksqlflow/flowtest/harness/target"
	"github.com/ksqlflow/flowtest/harness/workdir"
	"github.com/ksqlflow/flowtest/kintoneapi"
	"github.com/ksqlflow/flowtest/results"
	"github.com/ksqlflow/flowtest/results/redact"
	"github.com/ksqlflow/flowtest/runner"
	"github.com/ksqlflow/flowtest/safety"
)

// SweepRecordFile is the sweep record in its dated folder.
const SweepRecordFile = "sweep.json"

// sweepScope is what one scope left on the target.
type sweepScope struct {
	Head     string    `json:"scope"`                 // KSQL_FLOW_TEST_<yyMMddHHmmss>_<hex4>
	Scopes   []string  `json:"full_scopes,omitempty"` // full scope ids seen (request reasons)
	Made     time.Time `json:"made"`                  // from the scope's own timestamp
	State    int       `json:"state"`                 // records in the state app
	Audit    int       `json:"audit"`                 // records in the audit app
	Request  int       `json:"request"`               // records in the request app
	Locks    []string  `json:"held_locks,omitempty"`  // "record <id>: lease ends <t>"
	Action   string    `json:"action"`                // listed | deleted | left | failed
	Why      string    `json:"why,omitempty"`         // for left and failed
	Deleted  int       `json:"deleted,omitempty"`     // records deleted
	requests map[string]int
}

// sweepRecord is sweep.json: what was found, what was deleted, what was left and why.
type sweepRecord struct {
	SchemaVersion int          `json:"schema_version"`
	Target        string       `json:"target"`
	BaseURL       string       `json:"base_url"`
	At            time.Time    `json:"at"`
	OlderThan     string       `json:"older_than"`
	Delete        bool         `json:"delete"`
	LiveRunners   []string     `json:"live_runners,omitempty"` // "pid N since T" on this host
	Scopes        []sweepScope `json:"scopes"`
	Skipped       []string     `json:"skipped,omitempty"` // scopes not considered, and why
}

func cmdSweep(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("sweep", flag.ContinueOnError)
	var f runFlags
	f.bind(fset, false)
	olderThan := fset.Duration("older-than", time.Hour, "only scopes made longer ago than this (a positive duration); keep it above the longest run of a runner on another machine")
	del := fset.Bool("delete", false, "delete what is listed (default: list only)")
	fset.StringVar(&f.out, "out", "test-results", "results root: the sweep record goes to <out>/<YYYY-MM-DD>/<HHMMSS>-sweep/sweep.json")
	uses, code, ok := parseFlags(fset, "sweep", args, stderr)
	if !ok {
		return code
	}
	f.uses = uses
	if fset.NArg() > 0 {
		fmt.Fprintf(stderr, "flowtest sweep: unexpected arguments %q\n", fset.Args())
		return runner.ExitRefused
	}
	if *olderThan <= 0 {
		fmt.Fprintf(stderr, "flowtest sweep: --older-than %s: want a positive duration, e.g. 1h or 30m\n", *olderThan)
		return runner.ExitRefused
	}
	if err := f.validate(uses, false); err != nil {
		return exitFor(stderr, "sweep", err)
	}
	s, err := openSession(f)
	if err != nil {
		return exitFor(stderr, "sweep", err)
	}
	defer s.close()
	red := s.consoleRedactor()
	stdout, stderr = redactConsole(stdout, red), redactConsole(stderr, red)

	// The same safety preflight as run (deny list, profile, prefix, https, …).
	if static := safety.Preflight(s.in); !static.OK() {
		fmt.Fprintln(stderr, "flowtest sweep: refused by preflight; nothing was read or deleted:")
		safety.FormatViolations(stderr, static)
		return runner.ExitRefused
	}
	ctx := context.Background()
	var tgt *target.Target
	if s.in.Target == safety.TargetSandbox {
		bin, err := target.FindSandboxBinary(f.sandboxBin)
		if err != nil {
			fmt.Fprintf(stderr, "flowtest sweep: %v\n", err)
			return runner.ExitRefused
		}
		// A fresh emulator holds nothing: sweeping it proves the command, nothing more.
		if tgt, err = target.StartSandbox(ctx, target.SandboxOptions{Bin: bin, WorkDir: filepath.Join(s.workDir, "sandbox"), Profile: s.cfg.Profile()}); err != nil {
			fmt.Fprintf(stderr, "flowtest sweep: %v\n", err)
			return runner.ExitRefused
		}
		if rep := safety.CheckTarget(s.in.WithResolved(resolvedOf(tgt))); !rep.OK() {
			fmt.Fprintln(stderr, "flowtest sweep: refused by preflight:")
			safety.FormatViolations(stderr, rep)
			tgt.Close()
			return runner.ExitRefused
		}
	} else if tgt, err = liveTarget(s.cfg); err != nil {
		fmt.Fprintf(stderr, "flowtest sweep: %v\n", err)
		return runner.ExitRefused
	}
	defer tgt.Close()
	for _, a := range tgt.Apps {
		for kind, tok := range a.Tokens {
			red.AddSecret("token "+a.Role+" "+kind, tok)
		}
	}

	now := time.Now().UTC()
	rec := &sweepRecord{SchemaVersion: 1, Target: tgt.Name, BaseURL: tgt.BaseURL, At: now, OlderThan: olderThan.String(), Delete: *del}
	sw, err := newSweeper(tgt)
	if err != nil {
		fmt.Fprintf(stderr, "flowtest sweep: %v\n", err)
		return runner.ExitRefused
	}
	live, liveSince, runners, err := liveScopes()
	if err != nil {
		fmt.Fprintf(stderr, "flowtest sweep: %v\n", err)
		return runner.ExitRefused
	}
	rec.LiveRunners = runners
	found, skipped, err := sw.find(ctx, now, *olderThan, live, liveSince)
	if err != nil {
		fmt.Fprintf(stderr, "flowtest sweep: %v\n", err)
		return runner.ExitFailed
	}
	rec.Skipped = skipped
	// Every scope the sweep would delete passes the run's own identifier rules first.
	var idents []safety.Identifier
	for _, sc := range found {
		idents = append(idents, safety.Identifier{Scenario: "sweep", Kind: safety.IdentScope, Value: sc.Head})
		for _, full := range sc.Scopes {
			idents = append(idents, safety.Identifier{Scenario: "sweep", Kind: safety.IdentScope, Value: full})
		}
	}
	if err := s.checkLaterIdentifiers(idents); err != nil {
		fmt.Fprintf(stderr, "flowtest sweep: refused: %v\n", err)
		return runner.ExitRefused
	}
	failed := false
	for i := range found {
		sc := &found[i]
		if sc.Action == "left" || !*del {
			continue
		}
		if err := sw.delete(ctx, sc); err != nil {
			sc.Action, sc.Why = "failed", err.Error()
			failed = true
			continue
		}
		sc.Action = "deleted"
	}
	rec.Scopes = found
	printSweep(stdout, rec)
	dir, err := writeSweepRecord(f.out, now, rec, red)
	if err != nil {
		fmt.Fprintf(stderr, "flowtest sweep: the sweep record: %v\n", err)
		return runner.ExitFailed
	}
	fmt.Fprintf(stdout, "flowtest sweep: record %s\n", filepath.Join(dir, SweepRecordFile))
	if failed {
		return runner.ExitFailed
	}
	return runner.ExitPassed
}

// sweeper reads and deletes with the cleanup tokens through the guarded client: the state
// and audit apps with the tokens that may delete there, the request app with the harness's
// request token; the JOB log with none.
type sweeper struct {
	t    *target.Target
	api  *kintoneapi.Client
	apps hkintone.Apps
}

func newSweeper(t *target.Target) (*sweeper, error) {
	hc, err := kintoneapi.HTTPClientWithCA(t.CAFile)
	if err != nil {
		return nil, err
	}
	tokens := map[string]string{}
	for _, role := range []string{target.RoleState, target.RoleAudit} {
		if a, ok := t.Apps[role]; ok {
			tokens[a.ID] = a.Token("cleanup", "full")
		}
	}
	if a, ok := t.Apps[target.RoleRequest]; ok {
		tokens[a.ID] = a.Token("full")
	}
	return &sweeper{t: t, api: kintoneapi.New(t.BaseURL, hc, tokens), apps: guardApps(t)}, nil
}

func (sw *sweeper) client(scope string) (*hkintone.Client, error) {
	return hkintone.New(sw.api, sw.apps, scope, hkintone.Options{Profile: sw.t.Profile})
}

// find lists the scopes with records in the state, audit or request app, and decides for
// each: a live runner's (not listed, named in skipped), younger than olderThan (skipped), a
// held lock whose lease has not run out (left, with why), or a leftover (listed).
func (sw *sweeper) find(ctx context.Context, now time.Time, olderThan time.Duration, live map[string]bool, liveSince time.Time) ([]sweepScope, []string, error) {
	heads, err := hkintone.RunScopeHeads(ctx, sw.api, sw.apps.State)
	if err != nil {
		return nil, nil, err
	}
	byHead := map[string]*sweepScope{}
	for h, made := range heads {
		byHead[h] = &sweepScope{Head: h, Made: made, requests: map[string]int{}}
	}
	reqs, err := hkintone.RequestScopes(ctx, sw.api, sw.apps.Request)
	if err != nil {
		return nil, nil, err
	}
	for full, n := range reqs {
		h, made, _ := hkintone.ScopeHead(full)
		sc := byHead[h]
		if sc == nil {
			sc = &sweepScope{Head: h, Made: made, requests: map[string]int{}}
			byHead[h] = sc
		}
		sc.requests[full] += n
	}
	var out []sweepScope
	var skipped []string
	for _, h := range sortedHeads(byHead) {
		sc := byHead[h]
		switch {
		case live[h]:
			skipped = append(skipped, h+": a live runner's scope on this machine")
			continue
		case !liveSince.IsZero() && !sc.Made.Before(liveSince.Truncate(time.Second)):
			skipped = append(skipped, h+": made after a live runner on this machine started (it may be that runner's)")
			continue
		case now.Sub(sc.Made) < olderThan:
			skipped = append(skipped, fmt.Sprintf("%s: made %s ago, not older than --older-than %s", h, now.Sub(sc.Made).Round(time.Second), olderThan))
			continue
		}
		for full, n := range sc.requests {
			sc.Scopes = append(sc.Scopes, full)
			sc.Request += n
		}
		sort.Strings(sc.Scopes)
		c, err := sw.client(h)
		if err != nil {
			return nil, nil, err
		}
		audit, state, err := c.ScopeRecords(ctx)
		if err != nil {
			return nil, nil, err
		}
		sc.State, sc.Audit = len(state), len(audit)
		sc.Action = "listed"
		var liveLocks []string
		for _, l := range hkintone.HeldLocks(state) {
			desc := fmt.Sprintf("record %s: lease ends %s", l.ID, l.LeaseExpires.UTC().Format(time.RFC3339))
			if l.LeaseExpires.IsZero() {
				desc = fmt.Sprintf("record %s: lease_expires_at unreadable (counted as live)", l.ID)
			}
			sc.Locks = append(sc.Locks, desc)
			if l.Live(now) {
				liveLocks = append(liveLocks, desc)
			}
		}
		if len(liveLocks) > 0 {
			// A lock whose lease still runs may have a holder we cannot see (another machine):
			// the scope is left whole until lease_expires_at + 60 s has passed.
			sc.Action = "left"
			sc.Why = fmt.Sprintf("holds a NETWORK_LOCK whose lease has not run out (plus the %s allowance): %s", hkintone.LeaseAllowance, strings.Join(liveLocks, "; "))
		}
		if sc.State+sc.Audit+sc.Request == 0 {
			continue
		}
		out = append(out, *sc)
	}
	return out, skipped, nil
}

// delete removes one scope's leftovers: state and audit by the scope's head (every run whose
// business key or network id starts with it), requests by each full scope's reason prefix.
func (sw *sweeper) delete(ctx context.Context, sc *sweepScope) error {
	var errs []error
	if sc.State+sc.Audit > 0 {
		c, err := sw.client(sc.Head)
		if err != nil {
			return err
		}
		n, err := c.SweepScope(ctx)
		sc.Deleted += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, full := range sc.Scopes {
		c, err := sw.client(full)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n, err := c.SweepRequests(ctx, nil)
		sc.Deleted += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func sortedHeads(m map[string]*sweepScope) []string {
	out := make([]string, 0, len(m))
	for h := range m {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// liveScopes are the scope heads of the live runs on this machine (their work dirs' owner
// records), the start of the oldest of them, and a line per runner.
func liveScopes() (map[string]bool, time.Time, []string, error) {
	ents, err := workdir.List("")
	if err != nil {
		return nil, time.Time{}, nil, err
	}
	heads := map[string]bool{}
	var since time.Time
	var runners []string
	for _, e := range ents {
		if !e.Alive || e.Owner.PID == os.Getpid() {
			continue
		}
		runners = append(runners, fmt.Sprintf("pid %d since %s", e.Owner.PID, e.Owner.Started.UTC().Format(time.RFC3339)))
		if since.IsZero() || e.Owner.Started.Before(since) {
			since = e.Owner.Started
		}
		for _, sc := range e.Owner.Scopes {
			if h, _, ok := hkintone.ScopeHead(sc); ok {
				heads[h] = true
			}
		}
	}
	return heads, since, runners, nil
}

func printSweep(w io.Writer, rec *sweepRecord) {
	verb := "listed (pass --delete to remove them)"
	if rec.Delete {
		verb = "swept"
	}
	fmt.Fprintf(w, "flowtest sweep: %s target %s, scopes made more than %s ago by no live runner\n", rec.Target, rec.BaseURL, rec.OlderThan)
	for _, r := range rec.LiveRunners {
		fmt.Fprintf(w, "  live runner on this machine: %s\n", r)
	}
	if len(rec.Scopes) == 0 {
		fmt.Fprintln(w, "  no leftovers")
	}
	for _, sc := range rec.Scopes {
		fmt.Fprintf(w, "  %-7s %s (made %s): state %d, audit %d, request %d", sc.Action, sc.Head, sc.Made.Format(time.RFC3339), sc.State, sc.Audit, sc.Request)
		if sc.Action == "deleted" {
			fmt.Fprintf(w, " — %d record(s) deleted", sc.Deleted)
		}
		fmt.Fprintln(w)
		if sc.Why != "" {
			fmt.Fprintf(w, "          %s\n", sc.Why)
		}
	}
	for _, s := range rec.Skipped {
		fmt.Fprintf(w, "  not considered: %s\n", s)
	}
	n := 0
	for _, sc := range rec.Scopes {
		if sc.Action != "left" {
			n++
		}
	}
	fmt.Fprintf(w, "flowtest sweep: %d scope(s) %s, %d left, %d not considered\n", n, verb, len(rec.Scopes)-n, len(rec.Skipped))
}

// writeSweepRecord writes sweep.json, redacted like an archive file, into a dated folder.
func writeSweepRecord(out string, now time.Time, rec *sweepRecord, red *redact.Redactor) (string, error) {
	data, err := json.Marshal(rec)
	if err != nil {
		return "", err
	}
	clean, err := red.JSON(data)
	if err != nil {
		return "", err
	}
	dir, err := results.NewDatedDir(out, "sweep", now)
	if err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, SweepRecordFile), clean, 0o644)
}
