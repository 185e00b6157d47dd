//go:build !defect_topo_order_last_ready_first

package defect

// TopoOrderLastReadyFirst is the correct behaviour (see defects.yaml for the planted bug).
const TopoOrderLastReadyFirst = false
