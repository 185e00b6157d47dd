// Package buildtest builds the module's binaries for tests that must run them as processes
// (a launcher FlowNet starts, a live run started by the rehearsal, the end-to-end tests of the
// command line): a call in the test binary cannot show what a process does with its pid,
// signals and exit status.
package buildtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Exe is the executable suffix of this platform.
func Exe() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}

// Root is the module root: the nearest directory above the working directory with a go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Binaries builds ./cmd/<name> for each name into a new temporary directory and returns it;
// the caller removes it.
func Binaries(names ...string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "flowtest-bin-")
	if err != nil {
		return "", err
	}
	for _, name := range names {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name+Exe()), "./cmd/"+name)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("build %s: %v\n%s", name, err, out)
		}
	}
	return dir, nil
}

// RunWith is a TestMain's body for tests that run the binaries: it builds ./cmd/<name> for
// each name, sets *dir to their directory, calls run (m.Run, or m.Run and the package's own
// cleanup) and removes the directory. It returns the exit code for os.Exit: run's, or 1 when
// a binary does not build (said on stderr).
func RunWith(run func() int, dir *string, names ...string) int {
	d, err := Binaries(names...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(d)
	*dir = d
	return run()
}
