package safety

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf16"

	"gopkg.in/yaml.v3"
)

// Length limits of rule 7 (counted in UTF-16 code units, as kSQL-Flow's
// JavaScript does: job ids may be Japanese).
const (
	MaxJobIDUnits      = 60
	MaxJobLockKeyUnits = 64
)

// Preflight runs the static checks (rules 1, 2, 4, 5 origin, 7, 8, 9
// concurrency) and, in live mode, the target checks (rules 3, 5, 6) as
// well, since every live value is known from the configuration. In sandbox
// mode the base URL, app ids and tokens come from the emulator: call
// CheckTarget(in.WithResolved(...)) once it has started.
func Preflight(in Input) Report {
	var rep Report
	checkTargetChoice(&rep, in)
	checkConcurrency(&rep, in)
	checkDenyList(&rep, in)
	checkProfile(&rep, in)
	checkTokenOrigins(&rep, in)
	if in.Target == TargetLive {
		rep = rep.Merge(CheckTarget(in))
	}
	checkIdentifiers(&rep, in)
	checkFixtures(&rep, in)
	return rep
}

// CheckTarget runs the checks on the resolved target: base URL (rule 6), app
// ids (rule 3) and tokens (rule 5).
func CheckTarget(in Input) Report {
	var rep Report
	checkBaseURL(&rep, in)
	checkApps(&rep, in)
	checkTokens(&rep, in)
	return rep
}

// ---- rule 1 ----

func checkTargetChoice(rep *Report, in Input) {
	switch in.Target {
	case TargetSandbox, TargetLive:
	default:
		rep.fail("target", "--target", "unknown target %q (sandbox or live)", string(in.Target))
		return
	}
	ok := true
	if in.Target == TargetLive && in.TargetOrigin != OriginFlag {
		rep.fail("target", "--target", "live mode must be chosen explicitly with --target live (got it from %s)", originText(in.TargetOrigin))
		ok = false
	}
	for _, h := range in.TargetHints {
		if fold(h.Value) != string(in.Target) {
			rep.fail("target", h.Name, "%s=%q in %s is never honoured (the target is %s); live runs need --target live — remove it", h.Name, h.Value, originText(h.Origin), in.Target)
			ok = false
		}
	}
	if ok {
		if in.Target == TargetLive {
			rep.pass("target", "--target", "live, chosen explicitly")
		} else {
			if in.TargetOrigin == OriginFlag {
				rep.pass("target", "--target", "sandbox, chosen with --target")
			} else {
				rep.pass("target", "--target", "sandbox (default)")
			}
		}
	}
}

func originText(o Origin) string {
	switch o {
	case OriginUnset:
		return "nowhere (default)"
	case OriginDefault:
		return "the default"
	case OriginFlag:
		return "a command-line flag"
	case OriginOSEnv:
		return "the OS environment"
	case OriginDotEnv:
		return "the .env file"
	case OriginEmulator:
		return "the sandbox emulator"
	}
	return string(o)
}

// ---- rule 9 (static part) ----

func checkConcurrency(rep *Report, in Input) {
	c := in.Concurrency
	if c == 0 {
		c = 1 // unset means serial
	}
	switch {
	case c < 0:
		rep.fail("concurrency", "--concurrency", "concurrency %d is not positive", c)
	case in.Target == TargetLive && c > 1:
		rep.fail("concurrency", "--concurrency", "live runs are serial: concurrency %d refused (must be 1)", c)
	default:
		if in.ConcurrencyFrom != "" {
			rep.pass("concurrency", "--concurrency", "%d (%s)", c, in.ConcurrencyFrom)
			return
		}
		rep.pass("concurrency", "--concurrency", "%d", c)
	}
}

// ---- rule 4 ----

func checkDenyList(rep *Report, in Input) {
	src := strings.Join(in.DenyListSources, ", ")
	if src == "" {
		src = "no source"
	}
	ok := true
	for _, e := range in.DenyListErrors {
		rep.fail("denylist", VarDenyListFile, "%s", e)
		ok = false
	}
	d := in.DenyList
	if in.Target == TargetLive {
		if d.Empty() {
			rep.fail("denylist", "production deny list", "live mode needs a production deny list and it is empty or missing (%s): fail closed", src)
			return
		}
		if len(d.Apps) == 0 {
			rep.fail("denylist", "production deny list", "live mode needs at least one production app id in the deny list (%s)", src)
			return
		}
	}
	if ok {
		rep.pass("denylist", "production deny list", "%d app ids, %d job ids, %d profiles (%s)", len(d.Apps), len(d.Jobs), len(d.Profiles), src)
	}
}

// ---- rule 2 ----

func checkProfile(rep *Report, in Input) {
	name := in.Profile.Name
	if name == "" {
		name = VarProfile
	}
	p := in.EffectiveProfile()
	switch {
	case strings.TrimSpace(p) == "":
		rep.fail("profile", name, "profile is empty (unset it to use the default e2e)")
	case fold(p) == "prod":
		rep.fail("profile", name, "profile %q is the production profile", p)
	case in.DenyList.HasProfile(p):
		rep.fail("profile", name, "profile %q is on the production deny list", p)
	case p != strings.TrimSpace(p):
		rep.fail("profile", name, "profile %q has surrounding whitespace", p)
	case strings.ContainsAny(p, ":\x00"):
		rep.fail("profile", name, "profile %q contains ':' or NUL (it prefixes lock keys)", p)
	default:
		if in.Profile.Set() {
			rep.pass("profile", name, "%q from %s", p, originText(in.Profile.Origin))
		} else {
			rep.pass("profile", name, "%q (default)", p)
		}
	}
}

// ---- rule 5 (origins) ----

func checkTokenOrigins(rep *Report, in Input) {
	ok := true
	for _, n := range sortedUnique(in.DotEnvNames) {
		if IsWritableToken(n) {
			rep.fail("token-origin", n, "writable token found in the .env file %s; writable tokens belong in the OS environment only (read-only *_RO tokens may stay in .env)", in.DotEnvFile)
			ok = false
		}
	}
	for _, n := range sortedUnique(in.FlagNames) {
		if IsWritableToken(n) {
			rep.fail("token-origin", n, "writable token given as a command-line flag; set it in the OS environment only")
			ok = false
		}
	}
	for _, t := range in.Tokens {
		if t.Writable && (t.Origin == OriginDotEnv || t.Origin == OriginFlag) && !slices.Contains(in.DotEnvNames, t.Name) && !slices.Contains(in.FlagNames, t.Name) {
			rep.fail("token-origin", t.Name, "writable token comes from %s; it belongs in the OS environment only", originText(t.Origin))
			ok = false
		}
	}
	if ok {
		rep.pass("token-origin", ".env", "no writable token in .env or flags")
	}
}

func sortedUnique(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// ---- rule 6 ----

func checkBaseURL(rep *Report, in Input) {
	name := in.BaseURL.Name
	if name == "" {
		name = VarBaseURL
	}
	raw := strings.TrimSpace(in.BaseURL.Value)
	if raw == "" {
		rep.fail("base-url", name, "base URL is not set")
		return
	}
	u, err := url.Parse(raw)
	if err != nil {
		rep.fail("base-url", name, "base URL does not parse: %v", err)
		return
	}
	if u.User != nil {
		// Never echo the URL: the user-info may hold a password.
		rep.fail("base-url", name, "base URL carries user-info (credentials in the URL are refused)")
		return
	}
	if u.Host == "" || u.Hostname() == "" {
		rep.fail("base-url", name, "base URL %q has no host", raw)
		return
	}
	if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		rep.fail("base-url", name, "base URL %q has a query or fragment", raw)
		return
	}
	switch in.Target {
	case TargetLive:
		if u.Scheme != "https" {
			rep.fail("base-url", name, "live mode requires https:// (got %q)", u.Scheme+"://")
			return
		}
		rep.pass("base-url", name, "https, host %s", u.Hostname())
	default:
		if u.Scheme != "http" && u.Scheme != "https" {
			rep.fail("base-url", name, "sandbox base URL must be http(s) (got %q)", u.Scheme)
			return
		}
		// Only IP literals count as loopback: a name like "localhost" is
		// resolved through hosts files and resolvers we do not control.
		ip := net.ParseIP(u.Hostname())
		if ip == nil || !ip.IsLoopback() {
			rep.fail("base-url", name, "sandbox mode requires a loopback IP address (127.0.0.1 or ::1), got host %q", u.Hostname())
			return
		}
		rep.pass("base-url", name, "loopback %s", u.Host)
	}
}

// ---- rule 3 ----

// canonicalAppID accepts positive decimal integers written canonically.
func canonicalAppID(v string) error {
	switch {
	case v == "":
		return fmt.Errorf("empty")
	case v != strings.TrimSpace(v):
		return fmt.Errorf("%q has surrounding whitespace", v)
	case strings.HasPrefix(v, "-"):
		return fmt.Errorf("%q is negative", v)
	case strings.HasPrefix(v, "+"):
		return fmt.Errorf("%q has a sign", v)
	}
	for _, r := range v {
		if r < '0' || r > '9' {
			return fmt.Errorf("%q is not a decimal integer", v)
		}
	}
	switch {
	case v[0] == '0' && strings.Trim(v, "0") == "":
		return fmt.Errorf("%q is not positive", v)
	case v[0] == '0':
		return fmt.Errorf("%q has a leading zero (write it canonically)", v)
	case len(v) > 18:
		return fmt.Errorf("%q is too large", v)
	}
	return nil
}

func (in Input) requiredRoles() []AppRole {
	r := []AppRole{RoleState, RoleAudit, RoleLog}
	if in.needsRequest() {
		r = append(r, RoleRequest)
	}
	if in.needsCSV() {
		r = append(r, RoleCSV)
	}
	return r
}

func checkApps(rep *Report, in Input) {
	type good struct {
		name string
		role AppRole
		id   string
	}
	var valid []good
	required := in.requiredRoles()
	for _, spec := range AppCatalog() {
		a, ok := in.app(spec.Role)
		name := spec.Name
		if ok && a.Name != "" {
			name = a.Name
		}
		if !ok || !a.Set() {
			if slices.Contains(required, spec.Role) {
				rep.fail("app-id", name, "%s app id is required and not set", spec.Role)
			}
			continue
		}
		if err := canonicalAppID(a.Value); err != nil {
			rep.fail("app-id", name, "%s app id %v: must be a positive decimal integer written canonically", spec.Role, err)
			continue
		}
		if in.DenyList.HasApp(a.Value) {
			rep.fail("app-denylist", name, "%s app id %s is on the production deny list", spec.Role, a.Value)
			continue
		}
		rep.pass("app-id", name, "%s app %s", spec.Role, a.Value)
		valid = append(valid, good{name, spec.Role, a.Value})
	}
	// Every role is a different app: the guard's per-app rules and the
	// cleanup scopes would otherwise bleed into each other.
	distinct := true
	for i := range valid {
		for j := i + 1; j < len(valid); j++ {
			if valid[i].id == valid[j].id {
				rep.fail("app-distinct", valid[i].name+", "+valid[j].name, "%s and %s apps are both %s; they must be distinct apps", valid[i].role, valid[j].role, valid[i].id)
				distinct = false
			}
		}
	}
	if p := in.ProductionRequestApp; p.Set() && strings.TrimSpace(p.Value) != "" {
		pc := canonicalDigits(strings.TrimSpace(p.Value))
		for _, g := range valid {
			if canonicalDigits(g.id) == pc {
				rep.fail("production-request", g.name+", "+p.Name, "E2E %s app %s equals the production request app (%s)", g.role, g.id, p.Name)
				distinct = false
			}
		}
	}
	if distinct {
		rep.pass("app-distinct", "apps", "%d app ids, all distinct", len(valid))
	}
}

// ---- rule 5 (values) ----

func (in Input) requiredTokens() []string {
	r := []string{VarTokenExec, VarTokenAudit, VarTokenLogs, VarTokenLogsRO}
	if in.needsRequest() {
		r = append(r, VarTokenRequests, VarTokenRequestsRO)
	}
	if in.needsCSV() {
		r = append(r, VarTokenCSV, VarTokenCSVRO)
	}
	return r
}

func checkTokens(rep *Report, in Input) {
	for _, n := range in.requiredTokens() {
		t, ok := in.token(n)
		if !ok || !t.Set() || strings.TrimSpace(t.Value) == "" {
			rep.fail("token-present", n, "token is required and not set (or blank)")
		}
	}
	// write vs read-only separation
	pairs := map[[2]string]bool{}
	for _, ro := range in.Tokens {
		if ro.ReadOnlyOf == "" || !ro.Set() || strings.TrimSpace(ro.Value) == "" {
			continue
		}
		w, ok := in.token(ro.ReadOnlyOf)
		if !ok || strings.TrimSpace(w.Value) == "" {
			continue
		}
		pairs[[2]string{w.Name, ro.Name}] = true
		if strings.TrimSpace(w.Value) == strings.TrimSpace(ro.Value) {
			rep.fail("token-separation", w.Name+", "+ro.Name, "writable token equals its read-only counterpart")
		} else {
			rep.pass("token-separation", w.Name+", "+ro.Name, "writable and read-only tokens differ")
		}
	}
	// tokens are per app and per permission set: any other equality is a
	// copy-paste mistake that would hand one role's rights to another.
	distinct := true
	for i := range in.Tokens {
		for j := i + 1; j < len(in.Tokens); j++ {
			a, b := in.Tokens[i], in.Tokens[j]
			av, bv := strings.TrimSpace(a.Value), strings.TrimSpace(b.Value)
			if av == "" || av != bv || pairs[[2]string{a.Name, b.Name}] || pairs[[2]string{b.Name, a.Name}] {
				continue
			}
			rep.fail("token-distinct", a.Name+", "+b.Name, "two token variables hold the same token")
			distinct = false
		}
	}
	if p := in.ProductionRequestToken; strings.TrimSpace(p.Value) != "" {
		for _, n := range []string{VarTokenRequests, VarTokenRequestsRO, VarTokenRequestsCleanup} {
			if t, ok := in.token(n); ok && strings.TrimSpace(t.Value) == strings.TrimSpace(p.Value) {
				rep.fail("production-request", n+", "+p.Name, "E2E request token equals the production request token")
				distinct = false
			}
		}
	}
	if distinct {
		rep.pass("token-distinct", "tokens", "%d tokens, no two equal", countSet(in.Tokens))
	}
}

func countSet(ts []Token) int {
	n := 0
	for _, t := range ts {
		if strings.TrimSpace(t.Value) != "" {
			n++
		}
	}
	return n
}

// ---- rule 7 ----

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

func checkIdentifiers(rep *Report, in Input) {
	profile := in.EffectiveProfile()
	bad := map[string]bool{}
	for _, id := range in.Identifiers {
		subj := string(id.Kind)
		if id.Scenario != "" {
			subj = id.Scenario + " " + subj
		}
		if !strings.HasPrefix(id.Value, TestPrefix) {
			rep.fail("identifier-prefix", subj, "%q does not start with %s (exact, case-sensitive)", id.Value, TestPrefix)
			bad["identifier-prefix"] = true
		}
		if id.Kind != IdentJobID {
			continue
		}
		if n := utf16Len(id.Value); n > MaxJobIDUnits {
			rep.fail("job-id-length", subj, "job id %q is %d UTF-16 units (max %d)", id.Value, n, MaxJobIDUnits)
			bad["job-id-length"] = true
		}
		if n := utf16Len(profile + ":" + id.Value); n > MaxJobLockKeyUnits {
			rep.fail("job-lock-key-length", subj, "job lock key %q is %d UTF-16 units (max %d)", profile+":"+id.Value, n, MaxJobLockKeyUnits)
			bad["job-lock-key-length"] = true
		}
		if in.DenyList.HasJob(id.Value) {
			rep.fail("job-id-denylist", subj, "job id %q is a production job id", id.Value)
			bad["job-id-denylist"] = true
		}
	}
	n := len(in.Identifiers)
	for _, name := range []string{"identifier-prefix", "job-id-length", "job-lock-key-length", "job-id-denylist"} {
		if !bad[name] {
			rep.pass(name, "identifiers", "%d identifiers checked", n)
		}
	}
}

// ---- rule 8 ----

func checkFixtures(rep *Report, in Input) {
	allow := in.NetworkAllowList
	if allow == nil {
		allow = DefaultNetworkAllowList()
	}
	csv := in.CSVLogicalApp
	if csv == "" {
		csv = DefaultCSVLogicalApp
	}
	bad := map[string]bool{}
	fail := func(name, subj, reason string, args ...any) {
		rep.fail(name, subj, reason, args...)
		bad[name] = true
	}
	for _, f := range in.Fixtures {
		subj := f.Path
		jobIDs := slices.Clone(f.JobIDs)
		switch f.Kind {
		case FixtureNetwork:
			name := f.Name
			if name == "" {
				name = filepath.Base(f.Path)
			}
			if !slices.Contains(allow, name) {
				fail("fixture-allowlist", subj, "network fixture %q is not on the allow-list", name)
			}
			if len(f.Content) > 0 {
				ids, err := networkJobIDs(f.Content)
				if err != nil {
					fail("fixture-network", subj, "network YAML does not parse: %v", err)
				}
				jobIDs = append(jobIDs, ids...)
			}
		case FixtureSQL:
			stmts, err := ClassifySQL(string(f.Content), csv)
			if err != nil {
				fail("fixture-sql", subj, "refused: %v", err)
			}
			for _, s := range stmts {
				if s.Refused != "" {
					fail("fixture-sql", subj, "statement %d (line %d): %s; only SELECT, ASSERT, CREATE TEMP TABLE … AS SELECT and IMPORT INTO LAPP_%s are allowed", s.Index, s.Line, s.Refused, csv)
				}
			}
			if j := SQLJobName(string(f.Content)); j != "" {
				jobIDs = append(jobIDs, j)
			}
		default:
			fail("fixture-kind", subj, "unknown fixture kind %q", f.Kind)
		}
		for _, j := range jobIDs {
			if in.DenyList.HasJob(j) {
				fail("fixture-job-id", subj, "uses production job id %q", j)
			}
		}
	}
	for _, name := range []string{"fixture-allowlist", "fixture-sql", "fixture-job-id"} {
		if !bad[name] {
			rep.pass(name, "fixtures", "%d fixtures checked", len(in.Fixtures))
		}
	}
}

// networkJobIDs reads nodes[].job_id of a network YAML.
func networkJobIDs(content []byte) ([]string, error) {
	var doc struct {
		Nodes []struct {
			JobID string `yaml:"job_id"`
		} `yaml:"nodes"`
	}
	if err := yaml.Unmarshal(content, &doc); err != nil {
		return nil, err
	}
	var ids []string
	for _, n := range doc.Nodes {
		if n.JobID != "" {
			ids = append(ids, n.JobID)
		}
	}
	return ids, nil
}

// CheckIdentifiers runs rule 7 alone on identifiers made after preflight (a lock-conflict
// trial's sub-scope), with the same profile and deny list as the preflight that checked the
// scenario's first scope.
func CheckIdentifiers(in Input, ids []Identifier) Report {
	var rep Report
	in.Identifiers = ids
	checkIdentifiers(&rep, in)
	return rep
}

// CheckFixtures runs rule 8 alone on fixtures changed after preflight (a scenario's edit of
// its rendered SQL working copy), with the preflight's allow-list, CSV app and deny list.
func CheckFixtures(in Input, fixtures []Fixture) Report {
	var rep Report
	in.Fixtures = fixtures
	checkFixtures(&rep, in)
	return rep
}
