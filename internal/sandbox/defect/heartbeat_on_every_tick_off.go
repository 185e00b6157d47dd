//go:build !defect_heartbeat_on_every_tick

package defect

// HeartbeatOnEveryTick is the correct behaviour (see defects.yaml for the planted bug).
const HeartbeatOnEveryTick = false
