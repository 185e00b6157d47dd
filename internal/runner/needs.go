package runner

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Need is something a scenario requires beyond the base E2E environment every scenario has
// (state, audit and JOB log apps, kSQL-Flow, the FlowNet CLI: scenarios.md §3.1). Needs are
// declared once, in the manifest's `needs`, and every part of flowtest that depends on one
// reads that declaration instead of guessing from scenario ids or series.
type Need string

// The known needs. features/manifest.yaml explains them at its top; keep the two in step.
const (
	// NeedConfirmer: the scenario kills a kSQL-Flow child and force-unlocks its job lock,
	// which a named operator confirms (live: --confirmed-by or M5_FORCE_UNLOCK_CONFIRMED_BY,
	// refused without one; sandbox: the scope's own principal).
	NeedConfirmer Need = "confirmer"
	// NeedRequestApp: the E2E operation-request app and its two tokens (the request-app gate
	// of §3.2), and in live mode no pending REQUESTED/ACCEPTED request before the run.
	NeedRequestApp Need = "request-app"
	// NeedCSVIO: the CSV fixture app and its token, and an IO directory for per-scope CSV
	// roots (live: KSQL_FLOWNET_IO_DIR, an existing absolute directory; §3.4).
	NeedCSVIO Need = "csv-io"
	// NeedFaultProxy: a process talks to kintone through internal/harness/faultproxy (outage modes,
	// barriers, a synthetic write error, or call counting).
	NeedFaultProxy Need = "fault-proxy"
	// NeedLeaseWait: the scenario waits for a Network lease to expire (lease plus up to 60 s
	// of DATETIME minute truncation, up to 150 s per wait), so it takes minutes.
	NeedLeaseWait Need = "lease-wait"
	// NeedCLIKintone: the scenario drives the real cli-kintone (`cli-kintone record import`).
	NeedCLIKintone Need = "cli-kintone"
	// NeedIconv: the scenario checks Shift_JIS bytes against the distribution's iconv
	// (`iconv -t CP932`), an encoder the sandbox does not use; blocked without it.
	NeedIconv Need = "iconv"
	// NeedWindows: the scenario can run only on Windows; elsewhere it is not run.
	NeedWindows Need = "windows"
)

type needInfo struct {
	need  Need
	about string
}

// knownNeeds is the canonical order (lists and messages use it) with a one-line meaning for
// the dry-run legend.
var knownNeeds = []needInfo{
	{NeedConfirmer, "a named operator confirms the job-lock force-unlock after a kill (live: --confirmed-by or M5_FORCE_UNLOCK_CONFIRMED_BY)"},
	{NeedRequestApp, "the E2E request app and its two tokens; live: no pending REQUESTED/ACCEPTED request"},
	{NeedCSVIO, "the CSV fixture app and its token; live: KSQL_FLOWNET_IO_DIR, an existing absolute directory"},
	{NeedFaultProxy, "kintone traffic through the fault proxy (outage, barriers, injected errors, call counts)"},
	{NeedLeaseWait, "waits for a Network lease to expire (up to 150 s per wait)"},
	{NeedCLIKintone, "drives the real cli-kintone"},
	{NeedIconv, "checks Shift_JIS bytes against the distribution's iconv (-t CP932)"},
	{NeedWindows, "runs only on Windows"},
}

// KnownNeeds lists every need in canonical order.
func KnownNeeds() []Need {
	out := make([]Need, len(knownNeeds))
	for i, k := range knownNeeds {
		out[i] = k.need
	}
	return out
}

// About is the need's one-line meaning ("" for an unknown need).
func (n Need) About() string {
	for _, k := range knownNeeds {
		if k.need == n {
			return k.about
		}
	}
	return ""
}

func needRank(n Need) int {
	return slices.IndexFunc(knownNeeds, func(k needInfo) bool { return k.need == n })
}

func knownNeedList() string {
	names := make([]string, len(knownNeeds))
	for i, k := range knownNeeds {
		names[i] = string(k.need)
	}
	return strings.Join(names, ", ")
}

// Needs are one scenario's needs, in canonical order, each at most once.
type Needs []Need

// Has reports whether n includes need.
func (n Needs) Has(need Need) bool { return slices.Contains(n, need) }

// String is the comma-separated list, or "-" for none (table cells are never empty).
func (n Needs) String() string {
	if len(n) == 0 {
		return "-"
	}
	parts := make([]string, len(n))
	for i, x := range n {
		parts[i] = string(x)
	}
	return strings.Join(parts, ",")
}

// needError carries the YAML line of a bad need so ParseManifest can name file:line.
type needError struct {
	line int
	msg  string
}

func (e *needError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

// UnmarshalYAML accepts only a list of known needs, each once. The manifest is the one
// declaration, so a typo must refuse the run, not silently drop a safety check.
func (n *Needs) UnmarshalYAML(v *yaml.Node) error {
	if v.Kind != yaml.SequenceNode {
		return &needError{v.Line, fmt.Sprintf("needs must be a list, e.g. [confirmer] (known: %s)", knownNeedList())}
	}
	out := Needs{}
	for _, item := range v.Content {
		if item.Kind != yaml.ScalarNode {
			return &needError{item.Line, fmt.Sprintf("a need is a name (known: %s)", knownNeedList())}
		}
		need := Need(item.Value)
		if needRank(need) < 0 {
			return &needError{item.Line, fmt.Sprintf("unknown need %q (known: %s)", item.Value, knownNeedList())}
		}
		if out.Has(need) {
			return &needError{item.Line, fmt.Sprintf("need %q listed twice", item.Value)}
		}
		out = append(out, need)
	}
	slices.SortFunc(out, func(a, b Need) int { return needRank(a) - needRank(b) })
	*n = out
	return nil
}

// unmetOnHost is why a scenario cannot run on this machine at all, or "" when it can. Only a
// platform need is decided here; needs a run can meet (a confirmer, the request app …) are
// preflight's business, where a missing one refuses the run instead of skipping the scenario.
func unmetOnHost(needs Needs, goos string) string {
	if needs.Has(NeedWindows) && goos != "windows" {
		return fmt.Sprintf("%s%s (this is %s)", ReasonNeedsPrefix, NeedWindows, goos)
	}
	return ""
}
