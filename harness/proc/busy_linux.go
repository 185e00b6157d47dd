//go:build linux

package proc

import (
	"bytes"
	"os"
	"strconv"
)

func busySupported() bool {
	_, err := os.Stat("/proc/self/task")
	return err == nil
}

// treeBusy: a thread of root or of a process below it is in state R (running or runnable:
// a starved process is still busy) or D (uninterruptible sleep). Descendants are found
// through each thread's children file, which lists the children that thread forked; a
// kernel without it (CONFIG_PROC_CHILDREN off) gets a scan of every process's parent. A
// process gone while we look counts as asleep; the root gone is an error.
func treeBusy(root int) (bool, error) {
	var parents map[int][]int // the scan, taken once when a children file is missing
	seen := map[int]bool{root: true}
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		dir := "/proc/" + strconv.Itoa(pid) + "/task/"
		tasks, err := os.ReadDir(dir)
		if err != nil {
			if pid == root {
				return false, err
			}
			continue
		}
		var kids []int
		for _, t := range tasks {
			stat, err := os.ReadFile(dir + t.Name() + "/stat")
			if err != nil {
				continue // the thread ended
			}
			if s := threadState(stat); s == 'R' || s == 'D' {
				return true, nil
			}
			if parents != nil {
				continue
			}
			c, err := os.ReadFile(dir + t.Name() + "/children")
			if err != nil {
				if os.IsNotExist(err) {
					if parents, err = scanParents(); err != nil {
						return false, err
					}
				}
				continue
			}
			kids = appendPids(kids, c)
		}
		if parents != nil {
			kids = parents[pid]
		}
		for _, k := range kids {
			if !seen[k] {
				seen[k] = true
				queue = append(queue, k)
			}
		}
	}
	return false, nil
}

// threadState is the state letter of a /proc stat line: the field after the command, which
// is in parentheses and may itself hold spaces and parentheses.
func threadState(stat []byte) byte {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0
	}
	return stat[i+2]
}

func appendPids(out []int, b []byte) []int {
	for _, f := range bytes.Fields(b) {
		if n, err := strconv.Atoi(string(f)); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// scanParents maps every pid to its children from /proc/<pid>/stat's parent field.
func scanParents() (map[int][]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:]) // state, ppid, ...
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(string(f[1])); err == nil {
			out[ppid] = append(out[ppid], pid)
		}
	}
	return out, nil
}
