//go:build defect_topo_order_last_ready_first

package defect

// TopoOrderLastReadyFirst is planted: this binary was built with -tags defect_topo_order_last_ready_first (see defects.yaml).
const TopoOrderLastReadyFirst = true
