//go:build linux

package proc

import (
	"bytes"
	"context"
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
					if parents, err = childrenByParent(); err != nil {
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

// childrenByParent inverts the package's process table (parentMap, as every tree operation
// reads it): parent pid → children.
func childrenByParent() (map[int][]int, error) {
	parents, err := parentMap(context.Background())
	if err != nil {
		return nil, err
	}
	out := map[int][]int{}
	for pid, ppid := range parents {
		out[int(ppid)] = append(out[int(ppid)], int(pid))
	}
	return out, nil
}
