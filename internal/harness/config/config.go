// Package config loads flowtest's configuration: command-line flags win over
// the OS environment, which wins over the .env file (read with godotenv, never
// exported into the process environment). It remembers where every value came
// from, because safety rule 5 refuses writable tokens found in .env even when
// the OS environment overrides them, and builds the safety.Input the preflight
// checks.
//
// An empty value counts as unset in the OS environment and in .env (the
// env.e2e.example template ships empty values, and the original harness read
// `process.env.X || default`), so an empty OS variable does not hide the .env
// value. An empty flag, by contrast, is an explicit choice and is kept (and
// then refused where empty is invalid, e.g. --profile "").
package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ksqlflow/flowtest/internal/safety"
)

// DefaultDenyListFile is the operator-maintained deny list, relative to the
// repository root.
const DefaultDenyListFile = "safety/production-denylist.txt"

// Options says what to load.
type Options struct {
	// Target is the --target flag value ("" = not given: sandbox).
	Target string
	// EnvFile is the .env path ("" = none). A missing file is not an error unless
	// EnvFileRequired (the user named the file explicitly).
	EnvFile         string
	EnvFileRequired bool
	// OSEnv is the process environment (os.Environ()).
	OSEnv []string
	// Flags holds the flags the user gave, keyed by flag name (see Variables:
	// base-url, profile, concurrency, denylist-file, flownet-dir, lock-dir,
	// ca-file, target) or by variable name.
	Flags map[string]string
	// DenyListFile overrides FLOWTEST_DENYLIST_FILE and the repository default.
	DenyListFile string
	// SearchDir is where the search for safety/production-denylist.txt starts
	// (walking up); "" = the working directory.
	SearchDir string
}

// Var is one loaded variable.
type Var struct {
	Name   string
	Value  string
	Origin safety.Origin
	// InDotEnv is true when the .env file sets the variable to a non-empty
	// value, whatever won.
	InDotEnv bool
}

// Config is the loaded configuration.
type Config struct {
	Target       safety.Target
	TargetOrigin safety.Origin
	TargetHints  []safety.Setting

	EnvFile      string
	EnvFileFound bool

	Concurrency int
	// TimeoutScale multiplies every named wait limit (FLOWTEST_TIMEOUT_SCALE); 1 unless set.
	TimeoutScale float64
	// APIBudget is the per-app request budget of a live run (FLOWTEST_API_BUDGET); 0 unless
	// set, which means the default (internal/app/budget).
	APIBudget int64

	DenyList        safety.DenyList
	DenyListSources []string
	DenyListErrors  []string

	vars        map[string]Var
	dotEnvNames []string
	flagNames   []string
}

// Load reads flags, the OS environment and .env. Errors are for input that
// cannot be read at all (malformed .env, unknown flag, non-integer
// concurrency); everything else is left for the safety checks to report.
func Load(o Options) (*Config, error) {
	osEnv := map[string]string{}
	for _, kv := range o.OSEnv {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k != "" {
			osEnv[k] = v
		}
	}
	c := &Config{EnvFile: o.EnvFile, vars: map[string]Var{}}

	dot, found, err := ReadDotEnv(o.EnvFile, o.EnvFileRequired)
	if err != nil {
		return nil, err
	}
	c.EnvFileFound = found

	flags, targetFlag, err := c.readFlags(o)
	if err != nil {
		return nil, err
	}
	c.mergeVars(osEnv, dot, flags)
	c.setTarget(targetFlag, osEnv, dot)
	if err := c.parseNumbers(); err != nil {
		return nil, err
	}
	c.loadDenyList(o)
	return c, nil
}

// readFlags maps the configuration flags to variable names (recording them in flagNames)
// and returns the --target value apart: o.Target, else a "target" entry of o.Flags.
func (c *Config) readFlags(o Options) (flags map[string]string, targetFlag string, err error) {
	flags = map[string]string{}
	targetFlag = o.Target
	for k, v := range o.Flags {
		if k == "target" {
			if targetFlag == "" {
				targetFlag = v
			}
			continue
		}
		name, ok := flagVar(k)
		if !ok {
			if _, known := specOf(k); !known {
				return nil, "", fmt.Errorf("unknown configuration flag %q", k)
			}
			name = k
		}
		flags[name] = v
		c.flagNames = append(c.flagNames, name)
	}
	slices.Sort(c.flagNames)
	return flags, targetFlag, nil
}

// mergeVars sets every variable from its first non-empty source in the order flag, OS
// environment, .env (a flag counts even when empty), and records the names .env sets.
func (c *Config) mergeVars(osEnv, dot, flags map[string]string) {
	names := map[string]bool{}
	for _, m := range []map[string]string{osEnv, dot, flags} {
		for k := range m {
			names[k] = true
		}
	}
	for n := range names {
		v := Var{Name: n, InDotEnv: dot[n] != ""}
		if fv, ok := flags[n]; ok {
			v.Value, v.Origin = fv, safety.OriginFlag
		} else if ov := osEnv[n]; ov != "" {
			v.Value, v.Origin = ov, safety.OriginOSEnv
		} else if dv := dot[n]; dv != "" {
			v.Value, v.Origin = dv, safety.OriginDotEnv
		} else {
			continue
		}
		c.vars[n] = v
	}
	for n, v := range dot {
		if v != "" {
			c.dotEnvNames = append(c.dotEnvNames, n)
		}
	}
	slices.Sort(c.dotEnvNames)
}

// setTarget applies rule 1: the target comes from --target only. A FLOWTEST_TARGET found
// elsewhere is reported (never honoured), so nobody believes they are on live while running
// the sandbox or the other way round.
func (c *Config) setTarget(targetFlag string, osEnv, dot map[string]string) {
	if targetFlag == "" {
		c.Target, c.TargetOrigin = safety.TargetSandbox, safety.OriginDefault
	} else {
		c.Target, c.TargetOrigin = safety.Target(targetFlag), safety.OriginFlag
	}
	if ov := osEnv[safety.VarTargetHint]; ov != "" {
		c.TargetHints = append(c.TargetHints, safety.Setting{Name: safety.VarTargetHint, Value: ov, Origin: safety.OriginOSEnv})
	}
	if dv := dot[safety.VarTargetHint]; dv != "" {
		c.TargetHints = append(c.TargetHints, safety.Setting{Name: safety.VarTargetHint, Value: dv, Origin: safety.OriginDotEnv})
	}
}

// parseNumbers reads the concurrency (default 1), the timeout scale (default 1) and the API
// budget (default none), refusing values that are not numbers in range.
func (c *Config) parseNumbers() error {
	c.Concurrency = 1
	if v, ok := c.vars[VarConcurrency]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v.Value))
		if err != nil || n < 1 {
			return fmt.Errorf("%s (%s): %q is not an integer of at least 1", VarConcurrency, v.Origin, v.Value)
		}
		c.Concurrency = n
	}

	c.TimeoutScale = 1
	if v, ok := c.vars[VarTimeoutScale]; ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(v.Value), 64)
		// NaN and infinities parse but scale nothing meaningfully; refuse them with the rest.
		if err != nil || !(f > 0) || math.IsInf(f, 0) {
			return fmt.Errorf("%s (%s): %q is not a positive decimal (e.g. 3 for a slow live tenant)", VarTimeoutScale, v.Origin, v.Value)
		}
		c.TimeoutScale = f
	}

	if v, ok := c.vars[VarAPIBudget]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v.Value), 10, 64)
		if err != nil || n < 1 {
			return fmt.Errorf("%s (%s): %q is not an integer of at least 1 (requests per app)", VarAPIBudget, v.Origin, v.Value)
		}
		c.APIBudget = n
	}
	return nil
}

func (c *Config) loadDenyList(o Options) {
	path, explicit := o.DenyListFile, o.DenyListFile != ""
	if !explicit {
		if v, ok := c.vars[safety.VarDenyListFile]; ok {
			path, explicit = v.Value, true
		}
	}
	if !explicit {
		start := o.SearchDir
		if start == "" {
			start, _ = os.Getwd()
		}
		path = findUp(start, DefaultDenyListFile)
	}
	switch {
	case path == "":
		// Only live mode needs the file; the safety check reports an empty
		// list there as a violation, this says why it is empty.
		if c.Target == safety.TargetLive {
			c.DenyListErrors = append(c.DenyListErrors, fmt.Sprintf("deny list file %s not found in %s or any parent directory (set %s)", DefaultDenyListFile, orCwd(o.SearchDir), safety.VarDenyListFile))
		}
	default:
		b, err := os.ReadFile(path)
		if err != nil {
			c.DenyListErrors = append(c.DenyListErrors, fmt.Sprintf("read deny list file: %v", err))
			break
		}
		d, err := safety.ParseDenyList(bytes.NewReader(b), path)
		if err != nil {
			c.DenyListErrors = append(c.DenyListErrors, err.Error())
		}
		c.DenyList = c.DenyList.Merge(d)
		c.DenyListSources = append(c.DenyListSources, path)
	}
	if v, ok := c.vars[safety.VarDenyList]; ok {
		d, err := safety.ParseDenyListEntries(v.Value, safety.VarDenyList)
		if err != nil {
			c.DenyListErrors = append(c.DenyListErrors, err.Error())
		}
		c.DenyList = c.DenyList.Merge(d)
		c.DenyListSources = append(c.DenyListSources, safety.VarDenyList)
	}
}

func orCwd(dir string) string {
	if dir == "" {
		return "the working directory"
	}
	return dir
}

// findUp returns dir/rel for the first dir at or above start that has it.
func findUp(start, rel string) string {
	dir, err := filepath.Abs(start)
	if err != nil {
		return ""
	}
	for {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Lookup returns a variable and whether it is set.
func (c *Config) Lookup(name string) (Var, bool) {
	v, ok := c.vars[name]
	return v, ok
}

// Get returns a variable's value ("" if unset). Any variable of the OS
// environment or .env can be read, catalogued or not.
func (c *Config) Get(name string) string { return c.vars[name].Value }

func (c *Config) setting(name string) safety.Setting {
	v, ok := c.vars[name]
	if !ok {
		return safety.Setting{Name: name}
	}
	return safety.Setting{Name: name, Value: v.Value, Origin: v.Origin}
}

// Profile is the profile the run uses (default e2e).
func (c *Config) Profile() string {
	if v, ok := c.vars[safety.VarProfile]; ok {
		return v.Value
	}
	return "e2e"
}

// FlowConfig is KSQL_FLOW_CONFIG, falling back to KSQL_FLOW_CONFIG_PATH.
func (c *Config) FlowConfig() string {
	if v := c.Get(VarFlowConfig); v != "" {
		return v
	}
	return c.Get(VarFlowConfigPath)
}

// ParseArgs reads a *_BIN_ARGS value: a JSON string array if it starts with
// '[', else whitespace-separated (as FlowNet reads KSQL_FLOW_BIN_ARGS).
func ParseArgs(name, s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "[") {
		var out []string
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			return nil, fmt.Errorf("%s: not a JSON string array: %w", name, err)
		}
		return out, nil
	}
	return strings.Fields(s), nil
}

// FlowBinArgs parses KSQL_FLOW_BIN_ARGS.
func (c *Config) FlowBinArgs() ([]string, error) {
	return ParseArgs(VarFlowBinArgs, c.Get(VarFlowBinArgs))
}

// FlowNetCommand is how to start the live FlowNet CLI: FLOWTEST_FLOWNET_BIN
// (default node) with FLOWTEST_FLOWNET_BIN_ARGS (default
// <FLOWTEST_FLOWNET_DIR>/dist/cli/index.js), run in FLOWTEST_FLOWNET_DIR.
func (c *Config) FlowNetCommand() (bin string, args []string, dir string, err error) {
	dir = c.Get(VarFlowNetDir)
	bin = c.Get(VarFlowNetBin)
	if bin == "" {
		bin = "node"
	}
	if v := c.Get(VarFlowNetBinArgs); v != "" {
		args, err = ParseArgs(VarFlowNetBinArgs, v)
		return bin, args, dir, err
	}
	if dir == "" {
		return "", nil, "", fmt.Errorf("%s is not set: where is the kSQL-FlowNet checkout?", VarFlowNetDir)
	}
	return bin, []string{filepath.Join(dir, "dist", "cli", "index.js")}, dir, nil
}

// LockDir is where run-lock files live.
func (c *Config) LockDir() string {
	if v := c.Get(VarLockDir); v != "" {
		return v
	}
	return filepath.Join(os.TempDir(), "flowtest-locks")
}

// AppSettings is one live app: id and the writable ("full") and read-only
// tokens configured for it.
type AppSettings struct {
	Role       safety.AppRole
	ID         string
	Full, Read string
	// Cleanup is the harness's delete-capable token (state, audit), "" when Full serves both.
	Cleanup string
}

// LiveApps returns the configured apps by role (only roles with an id).
func (c *Config) LiveApps() map[safety.AppRole]AppSettings {
	out := map[safety.AppRole]AppSettings{}
	for _, a := range safety.AppCatalog() {
		id := c.Get(a.Name)
		if id == "" {
			continue
		}
		full, read := safety.TokenVars(a.Role)
		s := AppSettings{Role: a.Role, ID: id}
		if full != "" {
			s.Full = c.Get(full)
		}
		if read != "" {
			s.Read = c.Get(read)
		}
		if cl := safety.CleanupTokenVar(a.Role); cl != "" {
			s.Cleanup = c.Get(cl)
		}
		out[a.Role] = s
	}
	return out
}

// Secrets returns every loaded variable whose name contains TOKEN, SECRET or
// PASSWORD, for redaction.
func (c *Config) Secrets() map[string]string {
	out := map[string]string{}
	for n, v := range c.vars {
		u := strings.ToUpper(n)
		if v.Value != "" && (strings.Contains(u, "TOKEN") || strings.Contains(u, "SECRET") || strings.Contains(u, "PASSWORD")) {
			out[n] = v.Value
		}
	}
	return out
}

// SafetyInput builds the preflight input. In live mode it carries the base
// URL, app ids and tokens; in sandbox mode those come from the emulator
// (Input.WithResolved), so they are left empty here and the environment's
// live values are not checked (nor used). The caller sets Scenarios (nil =
// all) before calling safety.Preflight.
func (c *Config) SafetyInput(idents []safety.Identifier, fixtures []safety.Fixture) safety.Input {
	in := safety.Input{
		Target:                 c.Target,
		TargetOrigin:           c.TargetOrigin,
		TargetHints:            slices.Clone(c.TargetHints),
		Profile:                c.setting(safety.VarProfile),
		ProductionRequestApp:   c.setting(safety.VarProdReqID),
		ProductionRequestToken: c.setting(safety.VarProdReqTk),
		DenyList:               c.DenyList,
		DenyListSources:        slices.Clone(c.DenyListSources),
		DenyListErrors:         slices.Clone(c.DenyListErrors),
		DotEnvFile:             c.EnvFile,
		DotEnvNames:            slices.Clone(c.dotEnvNames),
		FlagNames:              slices.Clone(c.flagNames),
		Concurrency:            c.Concurrency,
		Identifiers:            idents,
		Fixtures:               fixtures,
	}
	if c.Target == safety.TargetLive {
		in.BaseURL = c.setting(safety.VarBaseURL)
		for _, a := range safety.AppCatalog() {
			in.Apps = append(in.Apps, safety.App{Role: a.Role, Setting: c.setting(a.Name)})
		}
		for _, t := range safety.TokenCatalog() {
			in.Tokens = append(in.Tokens, safety.NewToken(t, c.setting(t.Name)))
		}
	}
	return in
}
