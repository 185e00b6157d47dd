//go:build defect_rerun_skips_live_check

package defect

// RerunSkipsLiveCheck is planted: this binary was built with -tags defect_rerun_skips_live_check (see defects.yaml).
const RerunSkipsLiveCheck = true
