//go:build !defect_rerun_skips_live_check

package defect

// RerunSkipsLiveCheck is the correct behaviour (see defects.yaml for the planted bug).
const RerunSkipsLiveCheck = false
