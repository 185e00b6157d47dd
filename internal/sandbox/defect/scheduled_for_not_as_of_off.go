//go:build !defect_scheduled_for_not_as_of

package defect

// ScheduledForNotAsOf is the correct behaviour (see defects.yaml for the planted bug).
const ScheduledForNotAsOf = false
