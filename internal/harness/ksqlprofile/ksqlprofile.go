// Package ksqlprofile learns a kSQL-Flow profile the way the product contract offers it
// (`describe-profile --json`, product-contract §7) instead of parsing the operator's config
// file, whose format the contract does not fix; and it makes the one change of that file the
// harness needs — a copy whose profile reaches kintone through a proxy — proving with
// describe-profile that nothing else changed.
//
// It imports nothing of ours: the steps (held windows, the CSV write fault, the 案件管理
// reader) and the live preflight both use it.
package ksqlprofile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Kind is the kind of describe-profile's document.
const Kind = "PROFILE_DESCRIPTION"

// Description is describe-profile's document: the fields the harness reads, and the whole
// document for comparing two descriptions.
type Description struct {
	Profile       string
	BaseURL       string
	Apps          map[string]string // logical name -> app id
	LogAppID      string            // "" when the profile has no log app
	HTTPTimeoutMs int
	Doc           map[string]any
}

// Launcher is how to start kSQL-Flow: argv[0], leading arguments, environment, working dir.
type Launcher struct {
	Path string
	Args []string
	Env  []string
	Dir  string
	// Run starts and waits for the command (nil: cmd.Run); a caller whose children must die
	// with it passes its own.
	Run func(*exec.Cmd) error
}

// describeTimeout bounds one describe-profile (it reads a file and prints one line).
const describeTimeout = 60 * time.Second

// Describe runs `describe-profile --profile <profile> --config <config> --json`.
func Describe(ctx context.Context, l Launcher, profile, config string) (*Description, error) {
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	args := append(append([]string(nil), l.Args...), "describe-profile", "--profile", profile, "--config", config, "--json")
	cmd := exec.CommandContext(ctx, l.Path, args...)
	cmd.Env, cmd.Dir = l.Env, l.Dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	run := l.Run
	if run == nil {
		run = (*exec.Cmd).Run
	}
	if err := run(cmd); err != nil {
		return nil, fmt.Errorf("kSQL-Flow describe-profile --profile %s --config %s: %v: %s", profile, config, err, lastLine(stderr.String()))
	}
	d, err := Parse(stdout.Bytes())
	if err != nil {
		return nil, fmt.Errorf("kSQL-Flow describe-profile --profile %s --config %s: %w", profile, config, err)
	}
	return d, nil
}

// Parse reads the description from describe-profile's stdout: one JSON object of kind
// PROFILE_DESCRIPTION (the last such line, should anything precede it).
func Parse(out []byte) (*Description, error) {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var doc map[string]any
		dec := json.NewDecoder(strings.NewReader(lines[i]))
		dec.UseNumber()
		if dec.Decode(&doc) != nil || doc["kind"] != Kind {
			continue
		}
		return fromDoc(doc)
	}
	return nil, fmt.Errorf("no %s JSON line in its output %q", Kind, lastLine(string(out)))
}

func fromDoc(doc map[string]any) (*Description, error) {
	d := &Description{Doc: doc, Apps: map[string]string{}}
	d.Profile, _ = doc["profile"].(string)
	d.BaseURL, _ = doc["baseUrl"].(string)
	if d.BaseURL == "" {
		return nil, errors.New("the description has no baseUrl")
	}
	// App ids are JSON integers, as the real kSQL-Flow 0.9.0 prints them; the real FlowNet
	// 1.0.0 refuses anything else (isProfileDescription: Number.isSafeInteger), so do we.
	apps, _ := doc["apps"].(map[string]any)
	for name, id := range apps {
		s, err := intID(id)
		if err != nil {
			return nil, fmt.Errorf("the description's apps.%s: %w", name, err)
		}
		d.Apps[name] = s
	}
	if la, ok := doc["logApp"].(map[string]any); ok {
		s, err := intID(la["appId"])
		if err != nil {
			return nil, fmt.Errorf("the description's logApp.appId: %w", err)
		}
		d.LogAppID = s
	}
	if n, ok := doc["httpTimeoutMs"].(json.Number); ok {
		// A positive number of milliseconds (the real takes any positive number).
		v, err := n.Float64()
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("the description's httpTimeoutMs %s is not a positive number", n)
		}
		d.HTTPTimeoutMs = int(math.Ceil(v))
	}
	return d, nil
}

// intID is an app id the description gives as a JSON integer, in decimal.
func intID(v any) (string, error) {
	n, ok := v.(json.Number)
	if ok {
		if i, err := n.Int64(); err == nil && i > 0 && i <= 1<<53-1 {
			return strconv.FormatInt(i, 10), nil
		}
	}
	return "", fmt.Errorf("app id %v is not a positive JSON integer (the real FlowNet refuses the description: KSQL_FLOW_OUTPUT_INVALID)", v)
}

// HTTPTimeout is the profile's kintone request timeout; an error when the description does
// not report one (the contract says it does).
func (d *Description) HTTPTimeout() (time.Duration, error) {
	if d.HTTPTimeoutMs <= 0 {
		return 0, fmt.Errorf("describe-profile of %s reports no httpTimeoutMs", d.Profile)
	}
	return time.Duration(d.HTTPTimeoutMs) * time.Millisecond, nil
}

// HoldBound is the longest a proxy may hold one of the profile's kSQL-Flow requests: below
// the request timeout by a tenth of it (at least two seconds), so the proxy's own bound ends
// a forgotten hold before the child's timeout fails the read and says why. It is never more
// than limit.
func (d *Description) HoldBound(limit time.Duration) (time.Duration, error) {
	to, err := d.HTTPTimeout()
	if err != nil {
		return 0, err
	}
	margin := max(to/10, 2*time.Second)
	if to <= margin {
		return 0, fmt.Errorf("describe-profile of %s reports httpTimeoutMs %d: too short to hold a read", d.Profile, d.HTTPTimeoutMs)
	}
	return min(to-margin, limit), nil
}

// The documented change: the profile's base URL, which FlowNet's contract lets an operator
// point anywhere (product-contract §7 reports it normalized), is the one key a copy changes.
const baseURLKey = "baseUrl"

// WriteBaseURLCopy writes to dst a copy of the kSQL-Flow config src whose profile's baseUrl
// is baseURL; nothing else of the file changes in meaning (it is re-encoded as JSON).
func WriteBaseURLCopy(src, dst, profile, baseURL string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("kSQL-Flow config: %w", err)
	}
	cfg, err := decodeConfig(src, data)
	if err != nil {
		return err
	}
	prof, err := profileOf(cfg, src, profile)
	if err != nil {
		return err
	}
	if _, ok := prof[baseURLKey]; !ok {
		return fmt.Errorf("kSQL-Flow config %s: profile %s has no %s to change", src, profile, baseURLKey)
	}
	prof[baseURLKey] = baseURL
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, out, 0o600); err != nil {
		return fmt.Errorf("write the kSQL-Flow config copy: %w", err)
	}
	return nil
}

// WriteProvenCopy writes the base-URL copy (WriteBaseURLCopy) and proves it: the files differ
// in the documented key only (ChangedKeys), and describe of the copy equals orig, the
// original's description, but for its baseUrl, which is baseURL (CheckCopy).
func WriteProvenCopy(src, dst, profile, baseURL string, orig *Description, describe func(config string) (*Description, error)) error {
	if err := WriteBaseURLCopy(src, dst, profile, baseURL); err != nil {
		return err
	}
	changed, err := ChangedKeys(src, dst)
	if err != nil {
		return err
	}
	if want := DocumentedChange(profile); len(changed) != 1 || changed[0] != want {
		return fmt.Errorf("the kSQL-Flow config copy %s differs from %s in %s; only %s may change", dst, src, strings.Join(changed, ", "), want)
	}
	copied, err := describe(dst)
	if err != nil {
		return fmt.Errorf("kSQL-Flow does not accept a copy of its config with another base URL: %w", err)
	}
	return CheckCopy(orig, copied, baseURL)
}

// ChangedKeys lists, sorted, the dotted paths at which two config files differ (a key
// present in one only counts as changed).
func ChangedKeys(origPath, copyPath string) ([]string, error) {
	var docs [2]map[string]any
	for i, p := range []string{origPath, copyPath} {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("kSQL-Flow config: %w", err)
		}
		if docs[i], err = decodeConfig(p, data); err != nil {
			return nil, err
		}
	}
	var out []string
	diffKeys("", docs[0], docs[1], &out)
	sort.Strings(out)
	return out, nil
}

// DocumentedChange is the only path ChangedKeys may report for a copy of profile.
func DocumentedChange(profile string) string { return "profiles." + profile + "." + baseURLKey }

func diffKeys(prefix string, a, b map[string]any, out *[]string) {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	for k := range keys {
		va, okA := a[k]
		vb, okB := b[k]
		ma, isMapA := va.(map[string]any)
		mb, isMapB := vb.(map[string]any)
		switch {
		case okA && okB && isMapA && isMapB:
			diffKeys(prefix+k+".", ma, mb, out)
		case !okA || !okB || !reflect.DeepEqual(va, vb):
			*out = append(*out, prefix+k)
		}
	}
}

// CheckCopy proves a copy by its description: its baseUrl is baseURL and everything else
// describe-profile reports equals the original's description.
func CheckCopy(orig, copied *Description, baseURL string) error {
	if want := strings.TrimRight(baseURL, "/"); copied.BaseURL != want {
		return fmt.Errorf("describe-profile of the config copy reports baseUrl %s, not the proxy %s", copied.BaseURL, want)
	}
	var differ []string
	for k := range union(orig.Doc, copied.Doc) {
		if k != baseURLKey && !reflect.DeepEqual(orig.Doc[k], copied.Doc[k]) {
			differ = append(differ, k)
		}
	}
	if len(differ) > 0 {
		sort.Strings(differ)
		return fmt.Errorf("describe-profile of the config copy differs from the original's in %s, not only in %s", strings.Join(differ, ", "), baseURLKey)
	}
	return nil
}

func union(a, b map[string]any) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// TokenRefs are the variables of a logical app's `tokens` (`env:NAME` references, the real
// kSQL-Flow 0.9.0 format) in the config file, as the original reads them: describe-profile
// never shows a token or its source, and the variables are what the harness must resolve
// (and join with ",", as kSQL-Flow sends them) to read the app as kSQL-Flow does.
func TokenRefs(path, profile, logical string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kSQL-Flow config: %w", err)
	}
	cfg, err := decodeConfig(path, data)
	if err != nil {
		return nil, err
	}
	prof, err := profileOf(cfg, path, profile)
	if err != nil {
		return nil, err
	}
	apps, _ := prof["apps"].(map[string]any)
	app, _ := apps[logical].(map[string]any)
	toks, _ := app["tokens"].([]any)
	if len(toks) == 0 {
		return nil, fmt.Errorf("kSQL-Flow config %s: profile %s has no tokens for app %s (apps.%s.tokens)", path, profile, logical, logical)
	}
	var names []string
	for i, t := range toks {
		s, _ := t.(string)
		name, ok := strings.CutPrefix(s, "env:")
		if !ok || name == "" {
			return nil, fmt.Errorf("kSQL-Flow config %s: apps.%s.tokens[%d] of profile %s is not an env:NAME reference", path, logical, i, profile)
		}
		names = append(names, name)
	}
	return names, nil
}

func decodeConfig(path string, data []byte) (map[string]any, error) {
	var cfg map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers survive the copy as written
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("kSQL-Flow config %s is not JSON: %w", path, err)
	}
	return cfg, nil
}

func profileOf(cfg map[string]any, path, profile string) (map[string]any, error) {
	profiles, _ := cfg["profiles"].(map[string]any)
	prof, _ := profiles[profile].(map[string]any)
	if prof == nil {
		return nil, fmt.Errorf("kSQL-Flow config %s has no profile %s", path, profile)
	}
	return prof, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
