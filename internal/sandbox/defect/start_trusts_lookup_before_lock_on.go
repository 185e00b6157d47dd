//go:build defect_start_trusts_lookup_before_lock

package defect

// StartTrustsLookupBeforeLock is planted: this binary was built with -tags defect_start_trusts_lookup_before_lock (see defects.yaml).
const StartTrustsLookupBeforeLock = true
