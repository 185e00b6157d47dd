package flownet

import (
	"fmt"
	"strings"
)

// The Invocation's node sets and reason as the scheduler settles them. The Invocation is
// created with the sets admission foresees (selected_node_ids, preserved_node_ids,
// blocked_node_ids); the real FlowNet 1.0.0 rewrites all three when its scheduler closes the
// Invocation, from what the scheduler actually did, and appends what it adjudicated to the
// reason. The reference does the same, so the closed Invocation of the two compares equal:
//
//   - selected: a --rerun-from's selection, then every node the scheduler picked to start
//     (in the order it reached them) or deferred behind a running or waiting upstream;
//   - preserved: every node already SUCCESS;
//   - blocked: the retry brake's nodes, the roots a resume excludes (UNKNOWN, non-idempotent
//     FAILED/CANCELLED), then every node the scheduler BLOCKED or could not start;
//   - reason: "<creation reason>; <note>" where the note is the orphan adjudications
//     ("orphan attempts adjudicated: <attempt id>=<STATUS>(<CODE>), …") and the retry
//     brake's reasons joined by "; ", or the accepted hold ("cancel request CANCEL:<run id>
//     accepted"); no note, no suffix.
//
// Every list keeps the order of first insertion. An Invocation closed before the scheduler
// started (an admission rejection) keeps its creation sets and reason, as the product's does.
type invSets struct {
	started       bool
	sel, pres, bl idList
	adjudicated   []string // "<attempt id>=<STATUS>(<CODE>)"
	brakeReasons  []string
	holdNote      string
	ioFailureCode string // INPUT_FILE_MISSING, INPUT_FILE_MUTATED or OUTPUT_PATH_REJECTED of a node that failed before it started
}

// finalCode is the Invocation's result code for the aggregate's status and code: a FAILED
// Invocation whose last IO failure was a missing or mutated input or a rejected output
// reports that code, as the real FlowNet does.
func (e *execution) finalCode(status, code string) string {
	if status == StatusFailed && e.sets.ioFailureCode != "" {
		return e.sets.ioFailureCode
	}
	return code
}

// idList is a list of node ids without repeats, in the order of first insertion.
type idList struct {
	ids  []string
	seen map[string]bool
}

func (l *idList) add(id string) {
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	if !l.seen[id] {
		l.seen[id] = true
		l.ids = append(l.ids, id)
	}
}

func (l *idList) list() []string { return nonNil(l.ids) }

// startSets starts the scheduler's bookkeeping once the resume preparation has settled the
// Node States: a --rerun-from's selection, every SUCCESS node preserved, the retry brake's
// nodes and the excluded roots blocked. It returns the excluded nodes (the roots and their
// descendants).
func (e *execution) startSets() map[string]bool {
	s := &e.sets
	s.started = true
	if e.mode == "RERUN_FROM" {
		for _, id := range e.invSelected {
			s.sel.add(id)
		}
	}
	brake := map[string]bool{}
	for _, id := range e.brakeNodes {
		brake[id] = true
		s.bl.add(id)
	}
	roots := map[string]bool{}
	var rootOrder []string
	for _, id := range e.order {
		ns := e.states[id]
		switch {
		case ns.status == StatusSuccess:
			s.pres.add(id)
			continue
		case ns.status == StatusUnknown,
			(ns.status == StatusFailed || ns.status == StatusCancelled) && !ns.node.Idempotent,
			brake[id]:
			roots[id] = true
			rootOrder = append(rootOrder, id)
		}
	}
	for _, id := range rootOrder {
		s.bl.add(id)
	}
	excluded := map[string]bool{}
	for id := range roots {
		for d := range e.net.Descendants(id) {
			excluded[d] = true
		}
		excluded[id] = true
	}
	return excluded
}

// settledNode books a node the scheduler passes over without starting it (not WAITING).
func (e *execution) settledNode(ns *nodeState, excluded map[string]bool) {
	s := &e.sets
	switch {
	case !s.started:
	case ns.status == StatusSuccess:
		s.pres.add(ns.node.ID)
	case excluded[ns.node.ID]:
		s.bl.add(ns.node.ID)
	case e.upstreamPending(ns):
		s.sel.add(ns.node.ID)
	default:
		s.bl.add(ns.node.ID)
	}
}

func (e *execution) upstreamPending(ns *nodeState) bool {
	for _, d := range ns.node.DependsOn {
		if st := e.states[d].status; st == StatusWaiting || st == StatusRunning {
			return true
		}
	}
	return false
}

// adjudicatedNote books an orphan adjudication for the close reason.
func (e *execution) adjudicatedNote(attemptID, status, code string) {
	e.sets.adjudicated = append(e.sets.adjudicated, fmt.Sprintf("%s=%s(%s)", attemptID, status, code))
}

// closeNote is what the close appends to the Invocation reason ("" for nothing).
func (e *execution) closeNote() string {
	s := &e.sets
	if s.holdNote != "" {
		return s.holdNote
	}
	var parts []string
	if len(s.adjudicated) > 0 {
		parts = append(parts, "orphan attempts adjudicated: "+strings.Join(s.adjudicated, ", "))
	}
	parts = append(parts, s.brakeReasons...)
	parts = append(parts, e.notes...)
	return strings.Join(parts, "; ")
}
