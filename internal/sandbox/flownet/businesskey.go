package flownet

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// KeyInput is what run-network got on the command line for the business key.
type KeyInput struct {
	BusinessKey, ScheduledFor string
	HasBusinessKey            bool
	HasScheduledFor           bool
	// Manual is true when none of --resume, --resume-run, --business-key and
	// --scheduled-for was given: the product then generates <network_id>@manual-<UTC ts>.
	Manual bool
}

// DerivedKey is the outcome of business-key derivation.
type DerivedKey struct {
	BusinessKey string
	AsOf        *time.Time // set when scheduled_for is stored as the Run's as_of
}

// codedError carries a FlowNet error code to the `Error [<CODE>]: …` line.
type codedError struct {
	Code string
	Msg  string
	// Blocking lists run ids for RUN_ALREADY_EXISTS / MAX_ACTIVE_RUNS.
	Blocking []string
	Err      error
}

func (e *codedError) Error() string { return e.Msg }
func (e *codedError) Unwrap() error { return e.Err }

func coded(code, format string, args ...any) *codedError {
	return &codedError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// DeriveBusinessKey applies business_key_policy (product-contract §5) to the inputs.
// Errors carry the specific code (BUSINESS_KEY_REQUIRED, SCHEDULED_FOR_INVALID, …).
func DeriveBusinessKey(n *Network, in KeyInput, now time.Time) (DerivedKey, error) {
	if in.Manual {
		ts := now.UTC().Format("2006-01-02T15:04:05.000Z")
		ts = strings.NewReplacer("-", "", ":", "", ".", "").Replace(ts)
		k := n.NetworkID + "@manual-" + ts
		return DerivedKey{BusinessKey: k}, CheckBusinessKey(k)
	}
	var sched *time.Time
	if in.HasScheduledFor {
		t, err := ParseScheduledFor(in.ScheduledFor)
		if err != nil {
			return DerivedKey{}, err
		}
		sched = &t
	}
	switch n.Policy.Type {
	case "explicit":
		if sched != nil {
			return DerivedKey{}, coded("SCHEDULED_FOR_NOT_ALLOWED", "--scheduled-for is not allowed with business_key_policy explicit")
		}
		if !in.HasBusinessKey {
			return DerivedKey{}, coded("BUSINESS_KEY_REQUIRED", "--business-key is required with business_key_policy explicit")
		}
		return DerivedKey{BusinessKey: in.BusinessKey}, CheckBusinessKey(in.BusinessKey)
	case "scheduled_period":
		switch {
		case in.HasBusinessKey:
			// Key only, or a correction key with scheduled_for as the Run's as_of.
			return DerivedKey{BusinessKey: in.BusinessKey, AsOf: sched}, CheckBusinessKey(in.BusinessKey)
		case sched != nil:
			loc, err := time.LoadLocation(n.Policy.Timezone)
			if err != nil {
				return DerivedKey{}, coded("TIMEZONE_INVALID", "timezone %q: %v", n.Policy.Timezone, err)
			}
			d := sched.In(loc)
			if defect.ScheduledPeriodInUtc {
				d = sched.UTC() // planted defect: the period is taken from the UTC calendar, not the policy's time zone
			}
			k := strings.NewReplacer(
				"{network_id}", n.NetworkID,
				"{yyyy}", fmt.Sprintf("%04d", d.Year()),
				"{MM}", fmt.Sprintf("%02d", int(d.Month())),
				"{dd}", fmt.Sprintf("%02d", d.Day()),
			).Replace(n.Policy.Format)
			asOf := sched // the scheduled instant is the Run's as_of (cron path, START)
			if defect.ScheduledForNotAsOf {
				asOf = nil // planted defect: a derived key keeps no as_of, so jobs see the creation time
			}
			return DerivedKey{BusinessKey: k, AsOf: asOf}, CheckBusinessKey(k)
		default:
			return DerivedKey{}, coded("SCHEDULED_FOR_REQUIRED", "--scheduled-for or --business-key is required with business_key_policy scheduled_period")
		}
	}
	return DerivedKey{}, coded("BUSINESS_KEY_REQUIRED", "unsupported business_key_policy %q", n.Policy.Type)
}

// CheckBusinessKey applies the business-key rules plus the R1 identifier rules.
func CheckBusinessKey(k string) error {
	if k == "" {
		return coded("BUSINESS_KEY_EMPTY", "business key must not be empty")
	}
	if len(utf16.Encode([]rune(k))) > 128 {
		return coded("BUSINESS_KEY_TOO_LONG", "business key must be at most 128 UTF-16 code units")
	}
	for _, r := range k {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return coded("BUSINESS_KEY_CONTROL_CHARACTER", "business key must not contain control characters")
		}
	}
	if _, err := checkIdentifier("RECORD_KEY", "business_key", k); err != nil {
		ke := err.(*KeyError)
		return coded(ke.Code, "business key: %s", ke.Message)
	}
	return nil
}

var scheduledForRE = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?(Z|[+-]\d{2}:\d{2})$`)

// ParseScheduledFor parses --scheduled-for: a real ISO-8601 date-time with minutes, optional
// seconds and up to 3 fraction digits, and a mandatory Z or ±HH:MM offset (≤ ±14:00).
func ParseScheduledFor(s string) (time.Time, error) {
	m := scheduledForRE.FindStringSubmatch(s)
	bad := coded("SCHEDULED_FOR_INVALID", "--scheduled-for %q is not an ISO-8601 date-time with an offset", s)
	if m == nil {
		return time.Time{}, bad
	}
	atoi := func(x string) int { i, _ := strconv.Atoi(x); return i }
	y, mo, d, h, mi := atoi(m[1]), atoi(m[2]), atoi(m[3]), atoi(m[4]), atoi(m[5])
	sec := 0
	if m[6] != "" {
		sec = atoi(m[6])
	}
	ns := 0
	if m[7] != "" {
		frac := (m[7] + "00")[:3]
		ns = atoi(frac) * int(time.Millisecond)
	}
	if mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, bad
	}
	loc := time.UTC
	if m[8] != "Z" {
		oh, om := atoi(m[8][1:3]), atoi(m[8][4:6])
		if om > 59 || oh*60+om > 14*60 {
			return time.Time{}, bad
		}
		off := oh*3600 + om*60
		if m[8][0] == '-' {
			off = -off
		}
		loc = time.FixedZone(m[8], off)
	}
	t := time.Date(y, time.Month(mo), d, h, mi, sec, ns, loc)
	if t.Day() != d || int(t.Month()) != mo { // 2026-02-30 is not a real date
		return time.Time{}, bad
	}
	return t, nil
}
