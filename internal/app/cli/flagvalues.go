package cli

// Typed flag values whose errors name the expected form ("want a duration such as 90s, got
// \"5\""), where the flag package says "parse error". They implement flag.Value with String
// and Set only, so that pflag's AddGoFlagSet takes them as they are; parseFlags and
// parseExploreArgs put the flag's name in front (flagValueError).

import (
	"flag"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// durationValue is any duration; the range is the command's rule (validate.go).
type durationValue time.Duration

func (d *durationValue) String() string { return time.Duration(*d).String() }

func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("want a duration such as 90s, got %q", s)
	}
	*d = durationValue(v)
	return nil
}

// positiveDurationFlag is a duration above zero (explore's --time).
type positiveDurationFlag time.Duration

func (p *positiveDurationFlag) String() string { return time.Duration(*p).String() }

func (p *positiveDurationFlag) Set(s string) error {
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || v <= 0 {
		return fmt.Errorf("want a positive duration such as 10m, got %q", s)
	}
	*p = positiveDurationFlag(v)
	return nil
}

// intValue is any integer; the range is the command's rule.
type intValue int

func (n *intValue) String() string { return strconv.Itoa(int(*n)) }

func (n *intValue) Set(s string) error {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("want an integer such as 3, got %q", s)
	}
	*n = intValue(v)
	return nil
}

// positiveIntFlag is an integer of at least 1 (explore's --schedules, --depth).
type positiveIntFlag int

func (p *positiveIntFlag) String() string { return strconv.Itoa(int(*p)) }

func (p *positiveIntFlag) Set(s string) error {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || v < 1 {
		return fmt.Errorf("want a positive integer such as 3, got %q", s)
	}
	*p = positiveIntFlag(v)
	return nil
}

// countFlag is an integer of 0 or more (explore's --bound, --shrink-runs).
type countFlag int

func (p *countFlag) String() string { return strconv.Itoa(int(*p)) }

func (p *countFlag) Set(s string) error {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || v < 0 {
		return fmt.Errorf("want 0 or more, such as 2, got %q", s)
	}
	*p = countFlag(v)
	return nil
}

// uint64Flag is a non-negative integer of 64 bits (explore's --seed).
type uint64Flag uint64

func (p *uint64Flag) String() string { return strconv.FormatUint(uint64(*p), 10) }

func (p *uint64Flag) Set(s string) error {
	v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return fmt.Errorf("want a non-negative integer such as 42, got %q", s)
	}
	*p = uint64Flag(v)
	return nil
}

// durationFlag declares a duration flag with its default on fs.
func durationFlag(fs *flag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	fs.Var((*durationValue)(p), name, usage)
}

// intFlag declares an integer flag with its default on fs.
func intFlag(fs *flag.FlagSet, p *int, name string, def int, usage string) {
	*p = def
	fs.Var((*intValue)(p), name, usage)
}

// The flag package's own words for a value Set refused, and for a bad boolean.
var (
	invalidValue   = regexp.MustCompile(`^invalid value "(?s:.*)" for flag -([^:]+): (.*)$`)
	invalidBoolean = regexp.MustCompile(`^invalid boolean value "((?s:.*))" for -([^:]+): .*$`)
)

// flagValueError rewrites the flag package's error for a bad value as "--name: <what Set
// said>", so the message names the flag and the form once; ok is false for other errors.
func flagValueError(msg string) (string, bool) {
	if m := invalidValue.FindStringSubmatch(msg); m != nil {
		return "--" + m[1] + ": " + m[2], true
	}
	if m := invalidBoolean.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("--%s: want true or false (or the flag alone), got %q", m[2], m[1]), true
	}
	return "", false
}
