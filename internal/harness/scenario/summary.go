package scenario

import (
	"regexp"
	"strings"
)

// The codes an output summary keeps. They are what the defect crash rule
// (internal/app/defects/judge.go, crashOf) and a person reading a failed record need, and none of
// them carries a request's reason or a record's content.
var (
	summaryRuntime   = regexp.MustCompile(`^(panic: |fatal error: |goroutine \d+ \[)`)
	summaryCoded     = regexp.MustCompile(`^(Error|Warning) \[[A-Z0-9_]+\]`)
	summaryKintone   = regexp.MustCompile(`\b(?:CB|GAIA)_[A-Z]{2}\d{2}\b`)
	summaryCounters  = regexp.MustCompile(`^poll-requests(?: check)?: [a-z_]+=\S+(?: [a-z_]+=\S+)*$`)
	summaryJSONCodes = regexp.MustCompile(`"(outcome|invocation_result_code|code|audit|lock_released)"\s*:\s*("[A-Z0-9_]+"|true|false|null)`)
)

// SummarizeOutput reduces a process's output to a summary, one line per line that has
// something to keep: a Go runtime failure header ("panic: …" becomes "panic: (body not
// recorded)"), an "Error [CODE]" or "Warning [CODE]" prefix, kintone error codes, the
// poller's counters line, and the result codes of a JSON line. Everything else is dropped.
func SummarizeOutput(out string) string {
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, "\r")
		var parts []string
		switch {
		case summaryRuntime.MatchString(line):
			parts = append(parts, summaryRuntime.FindString(line)+"(body not recorded)")
		case summaryCoded.MatchString(line):
			parts = append(parts, summaryCoded.FindString(line))
		case summaryCounters.MatchString(line):
			parts = append(parts, line)
		}
		if codes := summaryKintone.FindAllString(line, -1); len(codes) > 0 && !summaryCounters.MatchString(line) {
			parts = append(parts, strings.Join(codes, " "))
		}
		if strings.HasPrefix(strings.TrimSpace(line), "{") {
			var kv []string
			for _, m := range summaryJSONCodes.FindAllStringSubmatch(line, -1) {
				kv = append(kv, `"`+m[1]+`":`+m[2])
			}
			if len(kv) > 0 {
				parts = append(parts, "{"+strings.Join(kv, ",")+"}")
			}
		}
		if len(parts) > 0 {
			keep = append(keep, strings.Join(parts, " "))
		}
	}
	return strings.Join(keep, "\n")
}
