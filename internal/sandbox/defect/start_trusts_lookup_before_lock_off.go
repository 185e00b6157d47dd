//go:build !defect_start_trusts_lookup_before_lock

package defect

// StartTrustsLookupBeforeLock is the correct behaviour (see defects.yaml for the planted bug).
const StartTrustsLookupBeforeLock = false
