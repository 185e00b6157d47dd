//go:build !defect_rerun_from_refuses_unexecuted

package defect

// RerunFromRefusesUnexecuted is the correct behaviour (see defects.yaml for the planted bug).
const RerunFromRefusesUnexecuted = false
