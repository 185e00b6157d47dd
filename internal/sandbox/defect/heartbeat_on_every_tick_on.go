//go:build defect_heartbeat_on_every_tick

package defect

// HeartbeatOnEveryTick is planted: this binary was built with -tags defect_heartbeat_on_every_tick (see defects.yaml).
const HeartbeatOnEveryTick = true
