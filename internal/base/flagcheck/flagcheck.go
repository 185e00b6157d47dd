// Package flagcheck holds the generic rules of flowtest's flag validation: the record of
// which flags were given and with which raw values (a flag parser keeps only the last, and
// cannot tell a default from a value given; internal/app/cli fills it as pflag parses), the
// refusal of a flag given twice, and the path
// rules (an existing file, an existing directory, a directory that exists or can be created,
// a file that can be written, an output that is not inside a folder the command reads).
// The path checks return a refusal (internal/base/refusal): a wrong flag value stops the command
// before anything starts. The rules of particular flags stay with the commands (internal/app/cli).
package flagcheck

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ksqlflow/flowtest/internal/base/refusal"
)

// Use is what the user wrote for one flag: every raw value, in order.
type Use struct{ Values []string }

// Last is the value that counts (the parser keeps the last), "" when none.
func (u Use) Last() string {
	if len(u.Values) == 0 {
		return ""
	}
	return u.Values[len(u.Values)-1]
}

// Repeated is a flag given more than once: the parser would keep the last value
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
	abs, err := absPath(flagName, p)
	if err != nil {
		return err
	}
	if why := dirProblem(p, abs, true); why != "" {
		return refusal.New("%s %q: %s", flagName, p, why)
	}
	return nil
}

// absPath is p made absolute, or the refusal of an empty path or one that cannot be made so.
func absPath(flagName, p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", refusal.New("%s %q: empty path", flagName, p)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", refusal.New("%s %q: %v", flagName, p, err)
	}
	return abs, nil
}

// CreatableFile accepts a path a command may write a file at: not empty, not a directory,
// and its directory one CreatableDir accepts (a directory that is a regular file is refused
// here, before anything is printed or written).
func CreatableFile(flagName, p string) error {
	abs, err := absPath(flagName, p)
	if err != nil {
		return err
	}
	if st, err := os.Stat(abs); err == nil && st.IsDir() {
		return refusal.New("%s %q: a directory, not a file", flagName, p)
	}
	if why := dirProblem(filepath.Dir(p), filepath.Dir(abs), false); why != "" {
		return refusal.New("%s %q: %s", flagName, p, why)
	}
	return nil
}

// dirProblem says why the directory p (abs: absolute) can neither be used nor created (""
// when it can); self tells whether the flag names p itself or a file in it.
func dirProblem(p, abs string, self bool) string {
	dir := abs
	for {
		st, err := os.Stat(dir)
		if err == nil {
			if !st.IsDir() {
				if dir == abs && self {
					return "a file, not a directory"
				}
				return "cannot be created: " + dir + " is a file"
			}
			break
		}
		// Missing, or a component is a file (ENOTDIR): look further up.
		parent := filepath.Dir(dir)
		if parent == dir {
			return "cannot be created: no existing parent directory"
		}
		dir = parent
	}
	probe, err := os.CreateTemp(dir, ".flowtest-probe-*")
	if err != nil {
		if dir == abs {
			return "cannot be created: " + p + " is not writable"
		}
		return "cannot be created: " + p + " (its nearest existing parent " + dir + ") is not writable"
	}
	name := probe.Name()
	probe.Close()
	os.Remove(name)
	return ""
}

// NotInside refuses a path to be written that is one of the folders a command reads, or lies
// inside one (a pack written into the folder it seals, a merged archive or an evidence table
// written into a shard or an archive it compares would change the input it vouches for).
// Paths are compared after making them absolute and resolving the links of their existing
// part; what names each input (e.g. "the archive being packed").
func NotInside(flagName, p string, inputs []string, what string) error {
	out, err := resolved(p)
	if err != nil {
		return refusal.New("%s %q: %v", flagName, p, err)
	}
	for _, in := range inputs {
		dir, err := resolved(in)
		if err != nil {
			return refusal.New("%s %q: %v", flagName, in, err)
		}
		if rel, err := filepath.Rel(dir, out); err == nil && filepath.IsLocal(rel) || out == dir {
			return refusal.New("%s %q: inside %s %s; write it elsewhere", flagName, p, what, in)
		}
	}
	return nil
}

// resolved is p absolute, with the links of its longest existing prefix resolved.
func resolved(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	var rest []string
	for dir := abs; ; {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs, nil
		}
		rest = append([]string{filepath.Base(dir)}, rest...)
		dir = parent
	}
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
