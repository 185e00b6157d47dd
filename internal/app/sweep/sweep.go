// Package sweep finds and deletes what runs that died before their cleanup left on the
// target (`flowtest sweep`): a dead run's scope would otherwise stay on the tenant for good.
// A scope's records are leftovers when its scope belongs to no live runner and is older than
// --older-than; they are listed per scope and app and, with --delete, removed by the
// per-scenario cleanup itself (internal/harness/kintoneguard SweepScope for the state and audit apps,
// SweepRequests for the request app: the reason-prefix rule), through the guarded client
// and after the same safety preflight as run. The JOB log is never read for it nor written:
// the client has no token for it and the guard refuses it by role.
//
// Which runners are live is known on this machine only: from the work dirs of live runs
// (internal/harness/workdir: owner pid and start, and the scopes they prepared). A scope made after
// the oldest live runner here started is left alone too (it could be a sub-scope made by
// that runner mid-scenario). A runner on another machine is protected by --older-than
// alone: keep it longer than the longest run.
//
// The command (internal/app/cli) keeps its flags, the session, the safety preflight and the
// identifier check of what would be deleted, and maps the outcome to an exit code.
package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/base/refusal"
	"github.com/ksqlflow/flowtest/internal/harness/kintoneguard"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/harness/workdir"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/redact"
)

// RecordFile is the sweep record in its dated folder.
const RecordFile = "sweep.json"

// Scope is what one scope left on the target.
type Scope struct {
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

// Record is sweep.json: what was found, what was deleted, what was left and why.
type Record struct {
	SchemaVersion int       `json:"schema_version"`
	Target        string    `json:"target"`
	BaseURL       string    `json:"base_url"`
	At            time.Time `json:"at"`
	OlderThan     string    `json:"older_than"`
	Delete        bool      `json:"delete"`
	LiveRunners   []string  `json:"live_runners,omitempty"` // "pid N since T" on this host
	Scopes        []Scope   `json:"scopes"`
	Skipped       []string  `json:"skipped,omitempty"` // scopes not considered, and why
}

// Sweeper reads and deletes with the cleanup tokens through the guarded client: the state
// and audit apps with the tokens that may delete there, the request app with the harness's
// request token; the JOB log with none.
type Sweeper struct {
	t    *target.Target
	api  *kintoneapi.Client
	apps kintoneguard.Apps
}

// New makes the sweeper of target t; apps are t's apps as the guard knows them.
func New(t *target.Target, apps kintoneguard.Apps) (*Sweeper, error) {
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
	return &Sweeper{t: t, api: kintoneapi.New(t.BaseURL, hc, tokens), apps: apps}, nil
}

func (sw *Sweeper) client(scope string) (*kintoneguard.Client, error) {
	return kintoneguard.New(sw.api, sw.apps, scope, kintoneguard.Options{Profile: sw.t.Profile})
}

// FindOptions say which scopes are leftovers: made before Now less OlderThan, by none of
// the Live runners.
type FindOptions struct {
	Now       time.Time
	OlderThan time.Duration
	Live      LiveRunners
}

// Find lists the scopes with records in the state, audit or request app, and decides for
// each: a live runner's (not listed, named in skipped), younger than OlderThan (skipped), a
// held lock whose lease has not run out (left, with why), or a leftover (listed).
func (sw *Sweeper) Find(ctx context.Context, o FindOptions) (scopes []Scope, skipped []string, err error) {
	defer func() {
		if err != nil && ctx.Err() != nil && !refusal.IsInterrupted(err) {
			// A read cut by the signal: the interruption, not the tenant, ended it.
			scopes, skipped, err = nil, nil, refusal.Interrupted("interrupted while reading the scopes; nothing was deleted")
		}
	}()
	byHead, err := sw.scopesByHead(ctx)
	if err != nil {
		return nil, nil, err
	}
	var out []Scope
	for _, h := range slices.Sorted(maps.Keys(byHead)) {
		if ctx.Err() != nil {
			return nil, nil, refusal.Interrupted("interrupted while reading the scopes; nothing was deleted")
		}
		sc := byHead[h]
		if why := skipReason(sc, o); why != "" {
			skipped = append(skipped, h+": "+why)
			continue
		}
		if err := sw.readScope(ctx, sc, o.Now); err != nil {
			return nil, nil, err
		}
		if sc.State+sc.Audit+sc.Request == 0 {
			continue
		}
		out = append(out, *sc)
	}
	return out, skipped, nil
}

// scopesByHead gathers the scopes by head: those with a run in the state app, and those
// with requests in the request app (counted per full scope).
func (sw *Sweeper) scopesByHead(ctx context.Context) (map[string]*Scope, error) {
	heads, err := kintoneguard.RunScopeHeads(ctx, sw.api, sw.apps.State)
	if err != nil {
		return nil, err
	}
	byHead := map[string]*Scope{}
	for h, made := range heads {
		byHead[h] = &Scope{Head: h, Made: made, requests: map[string]int{}}
	}
	reqs, err := kintoneguard.RequestScopes(ctx, sw.api, sw.apps.Request)
	if err != nil {
		return nil, err
	}
	for full, n := range reqs {
		h, made, _ := kintoneguard.ScopeHead(full)
		sc := byHead[h]
		if sc == nil {
			sc = &Scope{Head: h, Made: made, requests: map[string]int{}}
			byHead[h] = sc
		}
		sc.requests[full] += n
	}
	return byHead, nil
}

// skipReason says why a scope is not swept (a live runner's, possibly a live runner's, or
// not older than o.OlderThan), or "" when it is a candidate.
func skipReason(sc *Scope, o FindOptions) string {
	now, olderThan, liveSince := o.Now, o.OlderThan, o.Live.Since
	switch {
	case o.Live.Heads[sc.Head]:
		return "a live runner's scope on this machine"
	case !liveSince.IsZero() && !sc.Made.Before(liveSince.Truncate(time.Second)):
		return "made after a live runner on this machine started (it may be that runner's)"
	case now.Sub(sc.Made) < olderThan:
		return fmt.Sprintf("made %s ago, not older than --older-than %s", now.Sub(sc.Made).Round(time.Second), olderThan)
	}
	return ""
}

// readScope counts a candidate scope's records and lists its held locks: listed, or left
// (with why) while a lock's lease still runs at now.
func (sw *Sweeper) readScope(ctx context.Context, sc *Scope, now time.Time) error {
	for full, n := range sc.requests {
		sc.Scopes = append(sc.Scopes, full)
		sc.Request += n
	}
	sort.Strings(sc.Scopes)
	c, err := sw.client(sc.Head)
	if err != nil {
		return err
	}
	audit, state, err := c.ScopeRecords(ctx)
	if err != nil {
		return err
	}
	sc.State, sc.Audit = len(state), len(audit)
	sc.Action = "listed"
	var liveLocks []string
	for _, l := range kintoneguard.HeldLocks(state) {
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
		sc.Why = fmt.Sprintf("holds a NETWORK_LOCK whose lease has not run out (plus the %s allowance): %s", kintoneguard.LeaseAllowance, strings.Join(liveLocks, "; "))
	}
	return nil
}

// Interrupted is the Why of a scope --delete did not reach because a signal stopped the sweep.
const Interrupted = "not deleted: the sweep was interrupted before this scope"

// DeleteAll deletes every listed scope of found (a left one stays), one scope after
// another, and sets each one's Action: deleted, or failed with why. Before each scope it
// checks stop: once cancelled (the first SIGINT/SIGTERM) it deletes nothing more, marks the
// scopes not reached (Why: Interrupted) and returns refusal.Interrupted. The scope under way
// is finished first, so that an interrupt leaves no scope half swept, unless abort is
// cancelled too (the second signal): then its deletes stop at once and it is recorded as
// failed, with the records deleted so far. done, if set, is told of each scope as it is
// finished (the console's progress on a slow tenant). failed says whether a delete failed.
func (sw *Sweeper) DeleteAll(stop, abort context.Context, found []Scope, done func(*Scope)) (failed bool, err error) {
	for i := range found {
		sc := &found[i]
		if sc.Action == "left" {
			continue
		}
		if stop.Err() != nil {
			for j := i; j < len(found); j++ {
				if found[j].Action != "left" {
					found[j].Why = Interrupted
				}
			}
			return failed, refusal.Interrupted("interrupted: %d scope(s) not deleted", countListed(found[i:]))
		}
		if err := sw.Delete(abort, sc); err != nil {
			sc.Action, sc.Why = "failed", err.Error()
			failed = true
		} else {
			sc.Action = "deleted"
		}
		if done != nil {
			done(sc)
		}
	}
	return failed, nil
}

func countListed(scopes []Scope) int {
	n := 0
	for _, sc := range scopes {
		if sc.Action == "listed" {
			n++
		}
	}
	return n
}

// Delete removes one scope's leftovers: state and audit by the scope's head (every run whose
// business key or network id starts with it), requests by each full scope's reason prefix.
func (sw *Sweeper) Delete(ctx context.Context, sc *Scope) error {
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

// LiveRunners are the live runs on this machine other than this process.
type LiveRunners struct {
	Heads   map[string]bool // the scope heads they prepared
	Since   time.Time       // the start of the oldest of them
	Runners []string        // "pid N since T", one per runner
}

// FindLiveRunners reads the work dirs' owner records under tmpDir ("": the OS temp dir).
func FindLiveRunners(tmpDir string) (LiveRunners, error) {
	ents, err := workdir.List(tmpDir)
	if err != nil {
		return LiveRunners{}, err
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
			if h, _, ok := kintoneguard.ScopeHead(sc); ok {
				heads[h] = true
			}
		}
	}
	return LiveRunners{Heads: heads, Since: since, Runners: runners}, nil
}

// Print writes the record for a reader: one line per scope, then the count.
func Print(w io.Writer, rec *Record) {
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

// WriteRecord writes sweep.json, redacted like an archive file, into a dated folder under
// out, checks it for leaks, and returns that folder.
func WriteRecord(out string, now time.Time, rec *Record, red *redact.Redactor) (string, error) {
	data, err := json.Marshal(rec)
	if err != nil {
		return "", err
	}
	dir, err := results.NewDatedDir(out, "sweep", now)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, RecordFile)
	// Redacted by the record rules and whole or not at all, like an archive's files: a sweep
	// stopped while writing leaves no half record.
	if err := results.NewWriter(dir, red, results.JSONRecord).WriteFile(RecordFile, data); err != nil {
		return dir, err
	}
	// What was written is checked for what the redactor knows, as a run checks its archive.
	leaks, err := red.VerifyFiles([]string{path})
	if err == nil && len(leaks) > 0 {
		err = fmt.Errorf("%s holds what should have been redacted: %s", path, leaks[0])
	}
	return dir, err
}
