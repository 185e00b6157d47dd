// Package runlock is flowtest's exclusive run lock: one runner per
// environment. An environment is a kintone base URL plus the app ids a run
// writes through; the lock is one file per (base URL, app id) in a lock
// directory, so two runs that share any app of the same tenant exclude each
// other while runs on disjoint apps do not.
//
// A lock file is created atomically with its content (written to a temporary
// file, then hard-linked into place, which fails if the lock exists) and
// names its holder: pid, host, start time. A second runner is refused with
// *HeldError naming them. A lock whose holder process is gone on the same
// host (no such pid, or the pid now belongs to a process started at another
// time) is reclaimed with a warning. A holder on another host (a shared lock
// directory) is never reclaimed automatically: we cannot see its processes.
// Reclaims are serialised by an OS file lock (flock / LockFileEx) on a mutex
// file in the lock directory, so of several runners finding the same stale
// lock exactly one takes it over.
package runlock

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/shirou/gopsutil/v3/process"
)

// Holder is what a lock file records about the run holding it.
type Holder struct {
	PID  int    `json:"pid"`
	Host string `json:"host"`
	// Started is when the run took the lock.
	Started time.Time `json:"started"`
	// ProcStartMs is the holder process's creation time (ms since the
	// epoch), so a reused pid is not mistaken for the holder. 0 = unknown.
	ProcStartMs int64 `json:"proc_start_ms,omitempty"`
	// Environment is the base URL (without user-info) and app id locked.
	Environment string `json:"environment"`
	Nonce       string `json:"nonce"`
}

// HeldError is returned when another run holds the lock.
type HeldError struct {
	Holder Holder
	Path   string
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("another flowtest run holds the run lock for %s: pid %d on host %s, started %s (lock file %s); wait for it to finish, or remove the file if that run is gone",
		e.Holder.Environment, e.Holder.PID, e.Holder.Host, e.Holder.Started.UTC().Format(time.RFC3339), e.Path)
}

// Options say what to lock.
type Options struct {
	// Dir holds the lock files (created if missing).
	Dir string
	// BaseURL and AppIDs name the environment.
	BaseURL string
	AppIDs  []string
	// Warn receives the stale-lock reclaim warning (nil = discarded).
	Warn func(msg string)

	// For tests: who we claim to be and how liveness is judged. Zero values
	// mean this process, this host, time.Now and the real process table.
	PID   int
	Host  string
	Now   func() time.Time
	Alive func(h Holder) bool
}

// Lock is a held run lock.
type Lock struct {
	paths []string
	nonce string
}

// Paths lists the lock files held.
func (l *Lock) Paths() []string { return slices.Clone(l.paths) }

const maxAttempts = 8

// Acquire takes the lock for every (base URL, app id) of o, or none of them.
func Acquire(o Options) (*Lock, error) {
	if o.Dir == "" {
		return nil, errors.New("run lock: no lock directory")
	}
	base, err := normalizeBaseURL(o.BaseURL)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("run lock: create lock directory: %w", err)
	}
	me, err := self(o)
	if err != nil {
		return nil, err
	}
	alive := o.Alive
	if alive == nil {
		alive = processAlive
	}
	envs := environments(base, o.AppIDs)
	l := &Lock{nonce: me.Nonce}
	for _, env := range envs {
		path := filepath.Join(o.Dir, "flowtest-"+shortHash(env)+".lock")
		h := me
		h.Environment = env
		if err := acquireOne(path, h, o, alive); err != nil {
			_ = l.Release()
			return nil, err
		}
		l.paths = append(l.paths, path)
	}
	return l, nil
}

// Release removes the lock files this lock still owns (a file another run
// reclaimed meanwhile is left alone). It is safe to call twice.
func (l *Lock) Release() error {
	var first error
	for _, p := range l.paths {
		h, err := readHolder(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil || h.Nonce != l.nonce {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) && first == nil {
			first = fmt.Errorf("run lock: release %s: %w", p, err)
		}
	}
	l.paths = nil
	return first
}

func self(o Options) (Holder, error) {
	h := Holder{PID: o.PID, Host: o.Host}
	if h.PID == 0 {
		h.PID = os.Getpid()
	}
	if h.Host == "" {
		name, err := os.Hostname()
		if err != nil {
			return Holder{}, fmt.Errorf("run lock: host name: %w", err)
		}
		h.Host = name
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	h.Started = now().UTC()
	if p, err := process.NewProcess(int32(h.PID)); err == nil {
		if ms, err := p.CreateTime(); err == nil {
			h.ProcStartMs = ms
		}
	}
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return Holder{}, fmt.Errorf("run lock: nonce: %w", err)
	}
	h.Nonce = hex.EncodeToString(b)
	return h, nil
}

// normalizeBaseURL drops user-info, trailing slashes and case differences of
// scheme and host, so spellings of one tenant share a lock.
func normalizeBaseURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("run lock: base URL %q is not an absolute URL", raw)
	}
	host := strings.ToLower(u.Host)
	switch {
	case strings.EqualFold(u.Scheme, "https"):
		host = strings.TrimSuffix(host, ":443")
	case strings.EqualFold(u.Scheme, "http"):
		host = strings.TrimSuffix(host, ":80")
	}
	return strings.ToLower(u.Scheme) + "://" + host + strings.TrimRight(u.EscapedPath(), "/"), nil
}

func environments(base string, apps []string) []string {
	ids := slices.Clone(apps)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var out []string
	for _, id := range ids {
		if id = strings.TrimSpace(id); id != "" {
			out = append(out, base+" app "+id)
		}
	}
	if len(out) == 0 {
		out = []string{base}
	}
	return out
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:12])
}

func acquireOne(path string, me Holder, o Options, alive func(Holder) bool) error {
	for range maxAttempts {
		err := create(path, me)
		if err == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("run lock: create %s: %w", path, err)
		}
		h, err := readHolder(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // released meanwhile: try again
		}
		if err != nil {
			return fmt.Errorf("run lock: lock file %s is unreadable (%v); remove it if no flowtest run is active", path, err)
		}
		if !strings.EqualFold(h.Host, me.Host) || alive(h) {
			return &HeldError{Holder: h, Path: path}
		}
		reclaimed, err := reclaim(path, h)
		if err != nil {
			return err
		}
		if reclaimed && o.Warn != nil {
			o.Warn(fmt.Sprintf("flowtest: reclaimed stale run lock %s for %s: holder pid %d on host %s (started %s) is gone",
				path, h.Environment, h.PID, h.Host, h.Started.UTC().Format(time.RFC3339)))
		}
	}
	return fmt.Errorf("run lock: could not take %s after %d attempts (other runners are racing for it)", path, maxAttempts)
}

// create writes the holder to a private temporary file and links it into
// place: the lock appears atomically with its content, or not at all.
func create(path string, h Holder) error {
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.%s.tmp", path, h.Nonce)
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, path)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	// File systems without hard links: exclusive create, then write. A
	// reader can see an empty file for a moment; it reports it unreadable.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// reclaim removes a stale lock without ever deleting a fresh one. Reclaims
// are serialised by an OS file lock on the directory's mutex file; under it
// the file is re-read and removed only if it still is the stale holder's.
// Nothing else can replace that file meanwhile: creators only create when no
// file exists, the dead holder cannot release, and other reclaimers wait.
func reclaim(path string, stale Holder) (bool, error) {
	m, err := os.OpenFile(filepath.Join(filepath.Dir(path), ".flowtest-reclaim.mutex"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return false, fmt.Errorf("run lock: open reclaim mutex: %w", err)
	}
	defer m.Close()
	if err := lockFile(m); err != nil {
		return false, fmt.Errorf("run lock: take reclaim mutex: %w", err)
	}
	defer unlockFile(m)
	got, err := readHolder(path)
	if err != nil || got.Nonce != stale.Nonce {
		return false, nil // gone, replaced or unreadable: the caller looks again
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("run lock: remove stale %s: %w", path, err)
	}
	return true, nil
}

func readHolder(path string) (Holder, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Holder{}, err
	}
	var h Holder
	if err := json.Unmarshal(b, &h); err != nil {
		return Holder{}, fmt.Errorf("decode: %w", err)
	}
	if h.PID <= 0 || h.Nonce == "" {
		return Holder{}, errors.New("no holder pid or nonce")
	}
	return h, nil
}

// ProcessAlive reports whether the process pid, created at procStartMs (ms since the epoch;
// 0 = unknown), still runs on this host, by the rule the lock's reclaim uses: a pid that
// exists but was created at another time is another process; any doubt counts as alive.
func ProcessAlive(pid int, procStartMs int64) bool {
	return processAlive(Holder{PID: pid, ProcStartMs: procStartMs})
}

// ProcessStartMs is the creation time of process pid in ms since the epoch (0 when unknown),
// the value ProcessAlive compares.
func ProcessStartMs(pid int) int64 {
	p, err := process.NewProcess(int32(pid))
	if err != nil {
		return 0
	}
	ms, err := p.CreateTime()
	if err != nil {
		return 0
	}
	return ms
}

// processAlive reports whether the holder's process still runs: the pid
// exists and, when the lock recorded it, was created at the same time (a
// reused pid belongs to another process). Errors count as alive: never
// reclaim on doubt.
func processAlive(h Holder) bool {
	ok, err := process.PidExists(int32(h.PID))
	if err != nil {
		return true
	}
	if !ok {
		return false
	}
	if h.ProcStartMs == 0 {
		return true
	}
	p, err := process.NewProcess(int32(h.PID))
	if err != nil {
		return !errors.Is(err, process.ErrorProcessNotRunning)
	}
	ms, err := p.CreateTime()
	if err != nil {
		return true
	}
	d := ms - h.ProcStartMs
	return d > -1000 && d < 1000
}
