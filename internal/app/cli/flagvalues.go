package cli

// Typed flag values whose errors name the expected form ("want a duration such as 90s, got
// \"5\""), where the flag package says "parse error". They implement flag.Value with String
// and Set only, so that pflag's AddGoFlagSet takes them as they are; the command tree's
// flag error puts the flag's name in front (flagValueError).

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// durationValue is a duration flag: any duration, or with positive one above zero (a range
// that is a command's own rule is checked with its other flags, validate.go).
type durationValue struct {
	p        *time.Duration
	positive bool
}

func (d *durationValue) String() string {
	if d == nil || d.p == nil {
		return "0s"
	}
	return d.p.String()
}

func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(strings.TrimSpace(s))
	switch {
	case err != nil && !d.positive:
		return fmt.Errorf("want a duration such as 90s, got %q", s)
	case err != nil || (d.positive && v <= 0):
		return fmt.Errorf("want a positive duration such as 10m, got %q", s)
	}
	*d.p = v
	return nil
}

// intValue is an integer flag of at least min; want is the form the refusal names.
type intValue struct {
	p    *int
	min  int
	want string
}

func (n *intValue) String() string {
	if n == nil || n.p == nil {
		return "0"
	}
	return strconv.Itoa(*n.p)
}

func (n *intValue) Set(s string) error {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || v < n.min {
		return fmt.Errorf("want %s, got %q", n.want, s)
	}
	*n.p = v
	return nil
}

// The integer forms.
func anyInt(p *int) *intValue { return &intValue{p: p, min: math.MinInt, want: "an integer such as 3"} }
func positiveInt(p *int) *intValue {
	return &intValue{p: p, min: 1, want: "a positive integer such as 3"}
}
func countInt(p *int) *intValue { return &intValue{p: p, min: 0, want: "0 or more, such as 2"} }

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
	fs.Var(&durationValue{p: p}, name, usage)
}

// intFlag declares an integer flag with its default on fs.
func intFlag(fs *flag.FlagSet, p *int, name string, def int, usage string) {
	*p = def
	fs.Var(anyInt(p), name, usage)
}

// flagValueError is pflag's refusal of a value Set refused, as "--name: <what Set said>", so
// the message names the flag and the form once (a switch's value, which Go's flag package
// parses, as the form it wants); ok is false for other errors.
func flagValueError(err error) (string, bool) {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) {
		return "", false
	}
	f := bad.GetFlag()
	if f.NoOptDefVal == "true" { // a switch: the cause is strconv's
		return fmt.Sprintf("--%s: want true or false (or the flag alone), got %q", f.Name, bad.GetValue()), true
	}
	return "--" + f.Name + ": " + errors.Unwrap(bad).Error(), true
}
