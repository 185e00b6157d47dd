// Package flagcheck holds the generic rules of flowtest's flag validation: the record of
// which flags were given and with which raw values (the flag package keeps only the last, and
// cannot tell a default from a value given), the refusal of a flag given twice, and the path
// rules (an existing file, an existing directory, a directory that exists or can be created).
// The path checks return a refusal (internal/refusal): a wrong flag value stops the command
// before anything starts. The rules of particular flags stay with the commands (internal/cli).
package flagcheck

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ksqlflow/flowtest/internal/refusal"
)

// Use is what the user wrote for one flag: every raw value, in order.
type Use struct{ Values []string }

// Last is the value that counts (the flag package keeps the last), "" when none.
func (u Use) Last() string {
	if len(u.Values) == 0 {
		return ""
	}
	return u.Values[len(u.Values)-1]
}

// Uses reads, from args that fset has parsed successfully, which flags were given and with
// which raw values. It stops where the flag package stops (the first non-flag argument or
// "--").
func Uses(fset *flag.FlagSet, args []string) map[string]Use {
	uses := map[string]Use{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			break
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		name, value, hasValue := strings.Cut(name, "=")
		f := fset.Lookup(name)
		if f == nil {
			break
		}
		if !hasValue {
			if isBoolFlag(f) {
				value = "true"
			} else if i+1 < len(args) {
				i++
				value = args[i]
			}
		}
		u := uses[name]
		u.Values = append(u.Values, value)
		uses[name] = u
	}
	return uses
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// Repeated is a flag given more than once: the flag package would keep the last value
// silently (two --tags are not an "or").
type Repeated struct {
	Name   string
	Values []string
}

func (r Repeated) Error() string {
	quoted := make([]string, len(r.Values))
	for i, v := range r.Values {
		quoted[i] = strconv.Quote(v)
	}
	return fmt.Sprintf("--%s given %d times (%s)", r.Name, len(r.Values), strings.Join(quoted, ", "))
}

// Once refuses the first flag, in name order, given more than once and not repeatable, as a
// Repeated.
func Once(uses map[string]Use, repeatable ...string) error {
	for _, name := range slices.Sorted(maps.Keys(uses)) {
		if u := uses[name]; len(u.Values) > 1 && !slices.Contains(repeatable, name) {
			return Repeated{Name: name, Values: u.Values}
		}
	}
	return nil
}

// ExistingFile refuses a path that is empty, missing or a directory.
func ExistingFile(flagName, p string) error {
	st, err := os.Stat(p)
	switch {
	case strings.TrimSpace(p) == "":
		return refusal.New("%s %q: empty path", flagName, p)
	case errors.Is(err, fs.ErrNotExist):
		return refusal.New("%s %q: no such file", flagName, p)
	case err != nil:
		return refusal.New("%s %q: %v", flagName, p, unwrapPath(err))
	case st.IsDir():
		return refusal.New("%s %q: a directory, not a file", flagName, p)
	}
	return nil
}

// ExistingDir refuses a path that is empty or not a directory; what says what it should be.
func ExistingDir(flagName, p, what string) error {
	st, err := os.Stat(p)
	switch {
	case strings.TrimSpace(p) == "":
		return refusal.New("%s %q: empty path (%s)", flagName, p, what)
	case err != nil:
		return refusal.New("%s %q: not a directory (%s)", flagName, p, what)
	case !st.IsDir():
		return refusal.New("%s %q: not a directory (%s)", flagName, p, what)
	}
	return nil
}

// CreatableDir accepts an existing writable directory, or a path whose nearest existing
// ancestor is a writable directory (it is created when needed). Writability is tried with a
// probe file that is removed at once; nothing else is created.
func CreatableDir(flagName, p string) error {
	if strings.TrimSpace(p) == "" {
		return refusal.New("%s %q: empty path", flagName, p)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return refusal.New("%s %q: %v", flagName, p, err)
	}
	dir := abs
	for {
		st, err := os.Stat(dir)
		if err == nil {
			if !st.IsDir() {
				if dir == abs {
					return refusal.New("%s %q: a file, not a directory", flagName, p)
				}
				return refusal.New("%s %q: cannot be created: %s is a file", flagName, p, dir)
			}
			break
		}
		// Missing, or a component is a file (ENOTDIR): look further up.
		parent := filepath.Dir(dir)
		if parent == dir {
			return refusal.New("%s %q: cannot be created: no existing parent directory", flagName, p)
		}
		dir = parent
	}
	probe, err := os.CreateTemp(dir, ".flowtest-probe-*")
	if err != nil {
		what := "is not writable"
		if dir != abs {
			what = "(its nearest existing parent " + dir + ") is not writable"
		}
		return refusal.New("%s %q: cannot be created: %s %s", flagName, p, p, what)
	}
	name := probe.Name()
	probe.Close()
	os.Remove(name)
	return nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
