//go:build defect_rerun_from_refuses_unexecuted

package defect

// RerunFromRefusesUnexecuted is planted: this binary was built with -tags defect_rerun_from_refuses_unexecuted (see defects.yaml).
const RerunFromRefusesUnexecuted = true
