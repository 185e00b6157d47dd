package proc

// BusyProbe returns a func that tells whether the process or any of its descendants is
// doing something now: a thread running, waiting for a CPU or in uninterruptible sleep (disk).
// It is what lets `flowtest explore` tell a process blocked on a held write or asleep from one
// merely silent for a while (a child starting up, computation a loaded machine starves). Nil
// where the system cannot tell (no /proc): the caller then judges by silence alone.
func (p *Process) BusyProbe() func() bool {
	if !busySupported() {
		return nil
	}
	pid := p.pid
	return func() bool {
		busy, _ := treeBusy(pid)
		return busy
	}
}
