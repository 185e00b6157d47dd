package proc

// StopSignal is a graceful stop request, mapped per platform: on Unix Interrupt is
// SIGINT and Terminate is SIGTERM; on Windows both are CTRL_BREAK (SIGBREAK in Node),
// the only console signal that can be aimed at one child process group.
type StopSignal int

const (
	Interrupt StopSignal = iota + 1
	Terminate
)

func (s StopSignal) String() string {
	switch s {
	case Interrupt:
		return "interrupt"
	case Terminate:
		return "terminate"
	default:
		return "unknown-stop-signal"
	}
}
