//go:build defect_scheduled_for_not_as_of

package defect

// ScheduledForNotAsOf is planted: this binary was built with -tags defect_scheduled_for_not_as_of (see defects.yaml).
const ScheduledForNotAsOf = true
