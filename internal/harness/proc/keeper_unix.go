//go:build !windows

package proc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

var keeper struct {
	mu   sync.Mutex
	path string
	args []string
	w    *os.File // the keeper's stdin; nil until the first child
	err  error    // the keeper could not be started or told
}

// SetKeeper names the command that runs KeeperMain (the runner's own binary and
// KeeperCommand). The keeper is started with the first child and told every child's process
// group; see lifeline.go. Without SetKeeper (package tests, tools) there is no keeper and a
// dead runner's grandchildren are not reached.
func SetKeeper(path string, args ...string) {
	keeper.mu.Lock()
	defer keeper.mu.Unlock()
	keeper.path, keeper.args = path, append([]string(nil), args...)
}

// keeperTell sends one line ("+pgid" or "-pgid") to the keeper, starting it first if needed.
func keeperTell(line string) error {
	keeper.mu.Lock()
	defer keeper.mu.Unlock()
	if keeper.path == "" {
		return nil
	}
	if keeper.err != nil {
		return keeper.err
	}
	if keeper.w == nil {
		r, w, err := os.Pipe()
		if err != nil {
			keeper.err = fmt.Errorf("start the process keeper: %w", err)
			return keeper.err
		}
		cmd := exec.Command(keeper.path, keeper.args...)
		cmd.Stdin = r
		cmd.Stderr = os.Stderr // its one line, when it had to kill something, is for the operator
		cmd.Env = PlatformEnv()
		cmd.Dir = os.TempDir()
		// Its own group: Ctrl-C at the terminal and a kill of the runner's group must not end
		// it, and no parent-death signal: outliving the runner is its job.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		err = cmd.Start()
		r.Close()
		if err != nil {
			w.Close()
			keeper.err = fmt.Errorf("start the process keeper %s: %w", keeper.path, err)
			return keeper.err
		}
		go cmd.Wait() //nolint:errcheck // reaped whenever it ends; a dead keeper shows as a failed write
		keeper.w = w
	}
	if _, err := io.WriteString(keeper.w, line+"\n"); err != nil {
		keeper.err = fmt.Errorf("the process keeper is gone (%w): a child could outlive the runner", err)
		return keeper.err
	}
	return nil
}

func keeperAdd(pgid int) error { return keeperTell("+" + strconv.Itoa(pgid)) }

// keeperForget tells the keeper that a group is empty, so that the id, free for reuse by the
// system, is never signalled later. Best effort: a failed tell is seen at the next start.
func keeperForget(pgid int) {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		_ = keeperTell("-" + strconv.Itoa(pgid))
	}
}

// KeeperMain is the keeper process: it reads "+pgid" / "-pgid" lines from in (a pipe from the
// runner) until end of file — the runner ended, however it ended — then SIGKILLs every group
// still registered that has members and says so on stderr. Groups are forgotten by the runner
// once they are empty, so an id reused by the system is not signalled. Returns the exit code.
func KeeperMain(in io.Reader, stderr io.Writer) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT) // the terminal's signals are the runner's
	groups := map[int]bool{}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if len(line) < 2 {
			continue
		}
		n, err := strconv.Atoi(line[1:])
		if err != nil || n <= 1 {
			continue // never -1 or -0: kill(-1) is everything we may signal
		}
		switch line[0] {
		case '+':
			groups[n] = true
		case '-':
			delete(groups, n)
		}
	}
	var killed []int
	for g := range groups {
		if err := syscall.Kill(-g, syscall.SIGKILL); err == nil {
			killed = append(killed, g)
		}
	}
	if len(killed) > 0 {
		sort.Ints(killed)
		fmt.Fprintf(stderr, "flowtest keeper: the runner ended and left %d process group(s) alive; killed them: %v\n", len(killed), killed)
	}
	return 0
}
