package proc

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as the child process for these tests: when PROCTEST_MODE is
// set it acts out a role instead of running tests. Roles never live longer than
// helperLife, so even a broken test cannot leave processes behind for long.
const helperLife = 60 * time.Second

func init() {
	if os.Getenv("PROCTEST_MODE") == "runner" {
		// Keep the main thread for the main goroutine: a locked goroutine that ends on the
		// main thread does not end it, so actRunner's test of a thread ending would not be one.
		runtime.LockOSThread()
	}
}

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == KeeperCommand {
		os.Exit(KeeperMain(os.Stdin, os.Stderr))
	}
	if mode := os.Getenv("PROCTEST_MODE"); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

func argValue(name string) string {
	for i, a := range os.Args {
		if a == name && i+1 < len(os.Args) {
			return os.Args[i+1]
		}
	}
	return ""
}

func helper(mode string) int {
	switch mode {
	case "env":
		_ = json.NewEncoder(os.Stdout).Encode(os.Environ())
		return 0
	case "exit":
		fmt.Println("out-line")
		fmt.Fprintln(os.Stderr, "err-line")
		fmt.Println(`{"kind":"LOCK_INSPECTION_RESULT","held":true}`)
		code, _ := strconv.Atoi(os.Getenv("PROCTEST_CODE"))
		return code
	case "spam":
		line := strings.Repeat("x", 99) + "\n"
		for i := 0; i < 1000; i++ {
			os.Stdout.WriteString(line)
		}
		os.Stdout.WriteString("END\n")
		return 0
	case "trap":
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, os.Interrupt)
		fmt.Println("ready")
		select {
		case <-ch:
			fmt.Println("got interrupt")
			return 7
		case <-time.After(helperLife):
			return 1
		}
	case "ignore":
		signal.Ignore(os.Interrupt)
		fmt.Println("ready")
		time.Sleep(helperLife)
		return 1
	case "watcher":
		// Starts one sleeping child and reports its death the moment it sees it, as a
		// FlowNet reacts to its kSQL-Flow child's end.
		exe, _ := os.Executable()
		cmd := exec.Command(exe, "proctest-helper", "--level", "0")
		cmd.Env = append(os.Environ(), "PROCTEST_MODE=tree")
		cmd.Stdout = os.Stdout
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "start child:", err)
			return 2
		}
		fmt.Printf("pid %d level 1\n", os.Getpid())
		_ = cmd.Wait()
		fmt.Println("child died")
		time.Sleep(helperLife)
		return 1
	case "tree", "orphan":
		// argv: <exe> proctest-helper --level N --marker M. Each level prints its pid and
		// starts level N-1 sharing stdout; level 0 just sleeps. In "orphan" mode the
		// middle level exits once its child is up, orphaning the grandchild.
		level, _ := strconv.Atoi(argValue("--level"))
		fmt.Printf("pid %d level %d\n", os.Getpid(), level)
		if level > 0 {
			exe, _ := os.Executable()
			cmd := exec.Command(exe, "proctest-helper", "--level", strconv.Itoa(level-1), "--marker", argValue("--marker"))
			cmd.Env = os.Environ()
			cmd.Stdout = os.Stdout
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				fmt.Fprintln(os.Stderr, "start child:", err)
				return 2
			}
			if mode == "orphan" && level == 1 {
				return 0
			}
		}
		time.Sleep(helperLife)
		return 1
	case "runner":
		return actRunner()
	case "spin":
		// One goroutine busy without end: a process computing (or starved of a CPU).
		fmt.Println("ready")
		for deadline := time.Now().Add(helperLife); time.Now().Before(deadline); {
		}
		return 1
	case "spinchild":
		// Sleeps itself while its child spins: busy only through a descendant, as a poller
		// whose run-network child starts up.
		exe, _ := os.Executable()
		cmd := exec.Command(exe, "proctest-helper")
		cmd.Env = append(os.Environ(), "PROCTEST_MODE=spin")
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "start child:", err)
			return 2
		}
		fmt.Println("ready")
		time.Sleep(helperLife)
		return 1
	}
	fmt.Fprintln(os.Stderr, "unknown PROCTEST_MODE", mode)
	return 2
}

// actRunner plays a runner (PROCTEST_MODE=runner): with the keeper (unless PROCTEST_KEEPER=0),
// it starts a child (level 1) that starts a grandchild (level 0, same group), asking for the
// child from a goroutine locked to a thread that then ends — as Go ends the thread of a
// locked goroutine that returns. It prints both pids, then "alive" if the child survived the
// end of that thread, and waits to be killed.
func actRunner() int {
	exe, _ := os.Executable()
	if os.Getenv("PROCTEST_KEEPER") != "0" {
		SetKeeper(exe, KeeperCommand)
	}
	dir, err := os.MkdirTemp("", "proctest-runner-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	type started struct {
		p   *Process
		err error
	}
	ch := make(chan started, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: this thread ends with the goroutine
		p, err := Start(context.Background(), Spec{Name: "child", Path: exe, Args: []string{"proctest-helper", "--level", "1"},
			Env: append(PlatformEnv(), "PROCTEST_MODE=tree"), Dir: dir, LogDir: dir})
		ch <- started{p, err}
	}()
	st := <-ch
	if st.err != nil {
		fmt.Fprintln(os.Stderr, st.err)
		return 2
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := st.p.Stdout()
		if strings.Count(out, "\n") >= 2 {
			fmt.Print(out)
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "the child never reported its grandchild")
			return 2
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A parent-death signal tied to the ended thread would have killed the child by now;
	// half a second is ages for a signal already sent.
	if _, err := st.p.WaitTimeout(500 * time.Millisecond); err == nil {
		fmt.Println("died")
	} else {
		fmt.Println("alive")
	}
	time.Sleep(helperLife)
	return 1
}
