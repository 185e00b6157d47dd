// Package workdir makes a run's work dir (rendered fixtures, emulator data, child logs and
// configs — unredacted, so it must not outlive its use) and finds those of dead runs.
//
// A work dir is <temp>/flowtest-run-<random>/ (a rehearsal's: flowtest-rehearse-<random>/) holding owner.json: the pid, host and process
// start time of the runner that made it, when, whether it is to be kept (--keep-workdirs),
// and the scenario scopes the run uses (so that `flowtest sweep` never takes a live run's
// records for leftovers). A runner killed before its cleanup leaves its dir behind; the next
// run removes it (RemoveDead) once the owner is proven gone by the run lock's rule (same
// host; the pid does not exist or belongs to a process started at another time). A dir whose
// owner lives, runs on another host, or that has no readable owner.json is never touched.
package workdir

import (
	"encoding/json"

	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/runlock"
)

// Prefix starts the name of every run work dir in the temp dir.
const Prefix = "flowtest-run-"

// RehearsePrefix starts the name of a rehearsal's work dir (operator envs with tokens, the
// tenants' data and logs): owned and swept the same way.
const RehearsePrefix = "flowtest-rehearse-"

var prefixes = []string{Prefix, RehearsePrefix}

// OwnerFile is the owner record inside a work dir.
const OwnerFile = "owner.json"

// Owner is owner.json.
type Owner struct {
	PID         int       `json:"pid"`
	Host        string    `json:"host"`
	ProcStartMs int64     `json:"proc_start_ms"`
	Started     time.Time `json:"started"`
	Keep        bool      `json:"keep,omitempty"`
	Scopes      []string  `json:"scopes,omitempty"`
}

// Dir is this run's work dir.
type Dir struct {
	path  string
	mu    sync.Mutex
	owner Owner
}

// Create makes a run work dir in parent (the OS temp dir when "") owned by this process.
func Create(parent string, keep bool) (*Dir, error) { return CreateAs(parent, Prefix, keep) }

// CreateAs is Create with another of the known name prefixes (RehearsePrefix).
func CreateAs(parent, prefix string, keep bool) (*Dir, error) {
	if !slices.Contains(prefixes, prefix) {
		return nil, fmt.Errorf("run work dir: prefix %q is not one RemoveDead knows", prefix)
	}
	if parent == "" {
		parent = os.TempDir()
	}
	path, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return nil, fmt.Errorf("run work dir: %w", err)
	}
	host, _ := os.Hostname()
	d := &Dir{path: path, owner: Owner{PID: os.Getpid(), Host: host, ProcStartMs: runlock.ProcessStartMs(os.Getpid()),
		Started: time.Now().UTC(), Keep: keep}}
	if err := d.write(); err != nil {
		os.RemoveAll(path)
		return nil, err
	}
	return d, nil
}

// Path is the work dir.
func (d *Dir) Path() string { return d.path }

// AddScopes records scopes the run uses (for `flowtest sweep`).
func (d *Dir) AddScopes(scopes ...string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.owner.Scopes = append(d.owner.Scopes, scopes...)
	return d.write()
}

// write replaces owner.json atomically (temp file + rename): a reader never sees half of it.
func (d *Dir) write() error {
	data, err := json.Marshal(d.owner)
	if err != nil {
		return fmt.Errorf("run work dir owner: %w", err)
	}
	tmp := filepath.Join(d.path, "."+OwnerFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("run work dir owner: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(d.path, OwnerFile)); err != nil {
		return fmt.Errorf("run work dir owner: %w", err)
	}
	return nil
}

// Entry is a work dir found in the temp dir.
type Entry struct {
	Path  string
	Owner Owner
	// Alive: the owner runs (or might: another host, or any doubt).
	Alive bool
	Bytes int64
}

func (e Entry) describe() string {
	return fmt.Sprintf("%s (pid %d, started %s, %s)", e.Path, e.Owner.PID, e.Owner.Started.UTC().Format(time.RFC3339), humanBytes(e.Bytes))
}

// alive is how an owner's liveness is decided (a test replaces it).
var alive = func(o Owner) bool {
	host, err := os.Hostname()
	if err != nil || o.Host != host {
		return true // another host's processes cannot be seen: never presumed dead
	}
	return runlock.ProcessAlive(o.PID, o.ProcStartMs)
}

// List returns the work dirs in parent (the OS temp dir when "") that carry an owner.json,
// oldest first. Dirs without one (being created, or made by an older flowtest) are left out:
// nothing proves whose they are.
func List(parent string) ([]Entry, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	ents, err := os.ReadDir(parent)
	if err != nil {
		return nil, fmt.Errorf("list run work dirs in %s: %w", parent, err)
	}
	var out []Entry
	for _, e := range ents {
		if !e.IsDir() || !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(e.Name(), p) }) {
			continue
		}
		path := filepath.Join(parent, e.Name())
		data, err := os.ReadFile(filepath.Join(path, OwnerFile))
		if err != nil {
			continue
		}
		var o Owner
		if err := json.Unmarshal(data, &o); err != nil || o.PID <= 0 {
			continue
		}
		out = append(out, Entry{Path: path, Owner: o, Alive: alive(o)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Owner.Started.Before(out[j].Owner.Started) })
	return out, nil
}

// Report is what RemoveDead did.
type Report struct {
	Removed []Entry // dead owner, not kept: removed
	Kept    []Entry // dead owner, --keep-workdirs: left for inspection
	Failed  []error
}

// Line is the one console line about it ("" when there is nothing to say).
func (r Report) Line() string {
	var parts []string
	if len(r.Removed) > 0 {
		var total int64
		var names []string
		for _, e := range r.Removed {
			total += e.Bytes
			names = append(names, e.describe())
		}
		parts = append(parts, fmt.Sprintf("removed %d work dir(s) of dead runs (%s in all): %s", len(r.Removed), humanBytes(total), strings.Join(names, ", ")))
	}
	if len(r.Kept) > 0 {
		var names []string
		for _, e := range r.Kept {
			names = append(names, e.describe())
		}
		parts = append(parts, fmt.Sprintf("kept %d work dir(s) of dead runs made with --keep-workdirs (unredacted; remove them by hand): %s", len(r.Kept), strings.Join(names, ", ")))
	}
	for _, err := range r.Failed {
		parts = append(parts, err.Error())
	}
	if len(parts) == 0 {
		return ""
	}
	return "flowtest: " + strings.Join(parts, "; ")
}

// RemoveDead removes the work dirs in parent whose owner is gone, except those made with
// --keep-workdirs, which it lists. A live owner's dir is never touched.
func RemoveDead(parent string) (Report, error) {
	ents, err := List(parent)
	if err != nil {
		return Report{}, err
	}
	var r Report
	for _, e := range ents {
		if e.Alive {
			continue
		}
		e.Bytes = size(e.Path)
		if e.Owner.Keep {
			r.Kept = append(r.Kept, e)
			continue
		}
		if err := os.RemoveAll(e.Path); err != nil {
			r.Failed = append(r.Failed, fmt.Errorf("could not remove the work dir of a dead run %s: %w", e.Path, err))
			continue
		}
		r.Removed = append(r.Removed, e)
	}
	return r, nil
}

func size(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil && d.Type().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", n/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
