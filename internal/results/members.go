package results

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Members lists the files of an archive folder ('/'-separated, relative to it, sorted) and
// names, as Problems, every member that is not a regular file or a folder: a symbolic link
// (it could pull a file from anywhere into a scan, a merge or a pack, and the leak scan does
// not follow it), a device, a named pipe or a socket. flowtest writes none of these, so each
// is a sign that the folder is not what a run left. The folder itself may be given through a
// symbolic link (a "latest" link an operator keeps); nothing under it may be one. A folder
// that cannot be walked is an error.
func Members(dir string) ([]string, []Problem, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("archive %s: %w", dir, err)
	}
	st, err := os.Stat(root)
	if err != nil {
		return nil, nil, fmt.Errorf("archive %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, nil, fmt.Errorf("archive %s: not a directory", dir)
	}
	var files []string
	var probs []Problem
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// WalkDir does not follow links: every path it gives is under root.
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		switch t := d.Type(); {
		case rel == "." || t.IsDir():
		case t.IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			if n := linkCount(info); n > 1 {
				probs = append(probs, Problem{File: rel, What: fmt.Sprintf("a file with %d names (a hard link): an archive holds only its own regular files", n)})
				return nil
			}
			files = append(files, rel)
		case t&fs.ModeSymlink != 0:
			to, _ := os.Readlink(p)
			probs = append(probs, Problem{File: rel, What: fmt.Sprintf("a symbolic link (to %s): an archive holds only its own regular files", to)})
		default:
			probs = append(probs, Problem{File: rel, What: fmt.Sprintf("a %s, not a regular file: an archive holds only its own regular files", specialKind(t))})
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("archive %s: %w", dir, err)
	}
	sort.Strings(files)
	return files, probs, nil
}

func specialKind(t fs.FileMode) string {
	switch {
	case t&fs.ModeNamedPipe != 0:
		return "named pipe"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeCharDevice != 0:
		return "character device"
	case t&fs.ModeDevice != 0:
		return "device"
	}
	return "special file (" + t.String() + ")"
}

// Refused is an archive that a command will not read: members it may not hold (Members) or
// files that do not hold together (CheckIntegrity). Its message names the archive and every
// problem's file.
type Refused struct {
	Dir      string
	Problems []Problem
}

func (r *Refused) Error() string {
	lines := make([]string, len(r.Problems))
	for i, p := range r.Problems {
		lines[i] = p.String()
	}
	return fmt.Sprintf("archive %s is not read: %d problem(s): %s (flowtest archive verify %s names them)",
		r.Dir, len(r.Problems), strings.Join(lines, "; "), r.Dir)
}

// CheckReadable is what every reader of an archive given by the user (merge, evidence, diff,
// rerun) checks before it uses one: no member that is not a regular file or a folder
// (Members), and every file flowtest writes whole and in agreement (CheckIntegrity: a record
// that says failed where run.json says passed would otherwise be merged, compared or rerun
// as whichever side a reader happens to read). Problems come back as a *Refused.
func CheckReadable(dir string) error {
	_, probs, err := Members(dir)
	if err != nil {
		return err
	}
	if len(probs) == 0 {
		if !isArchive(dir) {
			return fmt.Errorf("%s is not a flowtest archive: it has neither run.json nor %s/", dir, ScenarioDir)
		}
		// Only a folder without links is read: CheckIntegrity follows what it opens.
		probs = CheckIntegrity(dir)
	}
	if len(probs) > 0 {
		return &Refused{Dir: dir, Problems: probs}
	}
	return nil
}

func isArchive(dir string) bool {
	for _, name := range []string{"run.json", ScenarioDir} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// ReadVerified is ReadArchive of an archive that passed CheckReadable: what a command reads
// from an archive the user handed it.
func ReadVerified(dir string) ([]*Scenario, *Run, error) {
	if err := CheckReadable(dir); err != nil {
		return nil, nil, err
	}
	scen, run, err := ReadArchive(dir)
	if err == nil && run == nil {
		// CheckIntegrity requires run.json; a reader relies on it too.
		err = errors.New("read archive " + dir + ": no run.json")
	}
	return scen, run, err
}
