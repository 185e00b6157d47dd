package proc

// Children never outlive the runner, however the runner dies. A runner killed
// with SIGKILL runs no cleanup, so the ending must be arranged before: three mechanisms, each
// covering what the others cannot.
//
//  1. The direct child is bound to the runner by the kernel: on Linux a parent-death signal
//     (Pdeathsig = SIGKILL); on Windows a job object with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
//     whose only handle is the runner's, so the kernel closes it — and kills every process in
//     the job, descendants included — when the runner ends.
//
//     Pdeathsig fires when the *thread* that forked the child ends, not the process
//     (golang/go#27505): Go ends a thread when a goroutine locked to it returns, so a child
//     forked from an arbitrary goroutine could be killed at a random moment. Every child is
//     therefore forked on one goroutine that locks its thread and never returns
//     (lifeline_linux.go): that thread ends only with the process.
//
//  2. Grandchildren (kSQL-Flow under FlowNet, a poller's helpers) get no signal when the runner
//     dies, and must not be bound to their own parent: an orphaned kSQL-Flow that keeps writing
//     after FlowNet was killed is what some scenarios provoke. They stay in the child's process
//     group, so on Unix a keeper process (SetKeeper, keeper_unix.go), started from the
//     runner's own binary in a group of its own, is told every child's group; when its stdin —
//     a pipe from the runner — reaches end of file, the runner is gone, and it SIGKILLs every
//     group it was told about that still has members. Descendants that call setsid escape
//     their group and this net (none of ours do). On Windows the job already holds them.
//
//  3. A child that serves (the kintone emulator) can be given Spec.ParentPipe: its stdin is a
//     pipe whose write end only the runner holds, so end of file on stdin means the runner is
//     gone (or let it go), on every platform and whatever happened to 1 and 2; the emulator
//     exits on it when told to (`flowsandbox kintone serve --exit-on-stdin-eof`).

// KeeperCommand is the hidden first argument with which the runner's binary runs KeeperMain
// (cmd/flowtest: `flowtest __keeper`).
const KeeperCommand = "__keeper"
