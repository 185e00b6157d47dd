// Package coverage is the assertion coverage map: the universe of subjects the product's
// contract names (record fields, JSON output fields, text line heads, exit codes, stated
// orders), and which scenarios' assertions read each, from a run's records. The naming
// rules are docs/coverage.md's; the universe is checked against product-contract.md's text
// by this package's tests, so it cannot drift from the contract.
package coverage

import (
	"regexp"
	"slices"
	"strings"
)

// Kind groups subjects by what the product writes.
type Kind string

const (
	KindRecord Kind = "record" // a field of a record in a kintone app (§4)
	KindAudit  Kind = "audit"  // a field of an OPERATION_AUDIT event's object (§1.5, §1.7, §1.9, §4.2)
	KindOutput Kind = "output" // a field of a machine JSON output (§1, §7)
	KindText   Kind = "text"   // the head of a text output line (§1)
	KindExit   Kind = "exit"   // a command's exit code (§1, §7)
	KindOrder  Kind = "order"  // an order the contract states
)

// Subject is one thing the product writes that an assertion may read.
type Subject struct {
	Name    string `json:"subject"`
	Kind    Kind   `json:"kind"`
	Section string `json:"section"` // the product-contract.md section that states it
}

// recordType is one record type of an app and the fields of §4's table it uses.
type recordType struct {
	app, name, section string
	fields             []string
}

// The record types of §4 and their fields (the "Used by" column). A field of the table that
// no record type carries would fail the contract test.
var recordTypes = []recordType{
	{"state", "NETWORK_RUN", "§4.1", words(`record_key record_type run_id network_id business_key max_active_runs
		definition_schema_version dialect status lifecycle_status resume_allowed as_of definition_sha256
		source_bundle_sha256 resolved_profile_sha256 ksql_flow_version engine_version source_bundle_attachment
		resolved_profile_snapshot created_at started_at finished_at updated_at related_audit_events
		related_requests related_job_logs`)},
	{"state", "NODE_STATE", "§4.1", words(`record_key record_type run_id revision status created_at started_at
		finished_at updated_at node_state_id node_id job_id active_attempt_id node_state_key latest_attempt_no
		idempotent trigger_rule blocked_by status_reason`)},
	{"state", "NETWORK_LOCK", "§4.1", words(`record_key record_type lock_key profile owner_invocation_id
		lease_token lease_expires_at heartbeat_at revision status started_at finished_at status_reason`)},
	{"state", "CANCEL_REQUEST", "§4.1", words(`record_key record_type run_id status_reason`)},
	{"audit", "RUN_INVOCATION", "§4.2", words(`record_key run_id started_at finished_at status result_code
		invocation_id mode requested_by host selected_node_ids preserved_node_ids blocked_node_ids reason`)},
	{"audit", "NODE_ATTEMPT", "§4.2", words(`record_key run_id finished_at status result_code invocation_id
		node_attempt_id attempt_key node_id job_id execution_id last_written_key attempt_no
		state_revision_before duration_sec read_count written_count last_successful_chunk_no
		execution_started_at runner_execution_started_at error_message`)},
	{"audit", "ATTEMPT_RESOLUTION", "§4.2", words(`record_key requested_by reason event_type attempt_id
		evidence_ref service_principal approved_by resolved_outcome resolved_at`)},
	{"audit", "OPERATION_AUDIT", "§4.2", words(`record_key run_id result_code reason resolved_at`)},
	{"request", "", "§4.3", words(`request_type run_id network_id business_key scheduled_for rerun_from_node
		reason cancel_requested request_state claimed_at claim_heartbeat_at claimed_host result_code
		result_message $id $revision 作成者 作成日時`)},
	{"joblog", "", "§4.4", words(`record_type status batch_id correlation_id attempt_id execution_id job_id
		runner_execution_started_at parent_batch_id job_key job_key_done script_name profile last_written_key
		executed_by host git_ref ksql_version as_of started_at finished_at duration_sec read_count
		written_count deleted_count api_calls error_message log_detail`)},
}

// auditEvent is one OPERATION_AUDIT event type and the fields of its audit object.
type auditEvent struct {
	name, section, anchor string   // anchor: the text just before the field list in the contract
	idents                []string // keys the contract names with their value before the list ("`event_id net_unlock_<uuid>`")
	fields                []string
}

var auditEvents = []auditEvent{
	{"NETWORK_LOCK_FORCE_RELEASED", "§1.5", "`event_id net_unlock_<uuid>`) fields:", words("event_type event_id"), words(`network_id profile
		lock_key record_id previous_owner_invocation_id previous_lease_token previous_heartbeat_at
		previous_lease_expires_at service_principal requested_by stop_confirmed_by stop_method
		stop_evidence_ref reason evidence_ref released_at post_release_revision`)},
	{"JOB_LOCK_FORCE_UNLOCK_RECORDED", "§1.7", "(`event_id job_unlock_<uuid>`, fields", words("event_id"), words(`run_id node_id
		job_id service_principal requested_by stop_confirmed_by reason evidence_ref recorded_at
		lock_recovery_result`)},
	{"RUN_ARCHIVED", "§1.9", "mismatch ⇒ `AUDIT_CONFLICT`. Audit fields:", nil, words(`event_id event_type run_id
		result_code requested_by reason archived_at previous_status run_revision_before service_principal`)},
	{"RECONCILIATION_REPAIR", "§4.2", "Reconciliation audit object:", nil, words(`event_id event_type repair_type
		run_id target_type target_id before after basis occurred_at`)},
}

// output is one machine JSON output and its fields (paths: `runs[].status`).
type output struct {
	name, section string
	fields        []string
}

var outputs = []output{
	{"run-network.json", "§1.3", words(`outcome run_id invocation_id aggregate_status invocation_result_code
		retry_brake_node_ids blocked_run_ids`)},
	{"archive-run.json", "§1.9", words(`outcome run_id event_id lock_released run_revision audit code`)},
	{"status.json", "§1.4", words(`network_id profile lock lock.record_id lock.owner_invocation_id
		lock.owner_instance_id lock.heartbeat_at lock.lease_expires_at lock.stale_candidate lock.revision
		runs[].run_id runs[].business_key runs[].status runs[].resume_allowed runs[].lifecycle_status
		runs[].created_at runs[].started_at runs[].finished_at runs[].updated_at runs[].hold
		runs[].hold.state runs[].hold.requested_by runs[].hold.requested_at runs[].activity
		runs[].invocations[].invocation_id runs[].invocations[].mode runs[].invocations[].status
		runs[].invocations[].result_code runs[].node_states[].node_id runs[].node_states[].status
		runs[].node_states[].status_reason runs[].node_states[].idempotent
		runs[].node_states[].latest_attempt_no runs[].node_states[].active_attempt_id
		runs[].node_states[].latest_attempt runs[].node_states[].active_attempt
		runs[].reconciliation.inconsistencies[].code runs[].reconciliation.inconsistencies[].node_id
		runs[].reconciliation.inconsistencies[].detail runs[].reconciliation.inconsistencies[].attempt_ids
		runs[].recovery_identifiers.resolve_node[].run_id runs[].recovery_identifiers.resolve_node[].node_id
		runs[].recovery_identifiers.force_unlock_network.network_id
		runs[].recovery_identifiers.force_unlock_network.profile
		runs[].recovery_identifiers.force_unlock_network.expected_owner_invocation_id
		runs[].recovery_identifiers.run_network.resume_run`)},
	{"ksql-flow.inspect-lock.json", "§7", words(`kind formatVersion jobKey locked record.recordId record.batchId
		record.startedAt record.host record.scriptName inspectedAt error.code`)},
	{"ksql-flow.force-unlock-job.json", "§7", words(`kind formatVersion jobKey recordId outcome
		before.batchId before.startedAt before.host executedAt nextAction`)},
	{"ksql-flow.run.result", "§7", words(`formatVersion kind contract correlationId attemptId executionId jobId
		profile status resultCode executionStarted exitCode asOf startedAt finishedAt durationMs readCount
		writtenCount deletedCount apiCalls lastSuccessfulChunkNo lastWrittenKey ksqlFlowVersion
		engineVersion error input_files output_files`)},
}

// textHead is the head of a text output line, as the contract quotes it.
type textHead struct{ command, head, section string }

var textHeads = []textHead{
	{"any", "Error [", "§1"},
	{"any", "Invalid <command> arguments:", "§1"},
	{"validate", "Valid network definition: ", "§1.1"},
	{"validate", "Network validation failed with ", "§1.1"},
	{"plan", "Business key: ", "§1.2"},
	{"plan", "Execution plan:", "§1.2"},
	{"run-network", "NEW|RESUME: Run ", "§1.3"},
	{"run-network", "NO-OP: Run ", "§1.3"},
	{"run-network", "Blocking run_id(s): ", "§1.3"},
	{"force-unlock-network", "RELEASED: ", "§1.5"},
	{"resolve-node", "RESOLVED: ", "§1.6"},
	{"record-job-unlock", "RECORDED: ", "§1.7"},
	{"cancel-run", "<STATE>: CANCEL:", "§1.8"},
	{"poll-requests", "poll-requests check: ok ", "§1.10"},
	{"poll-requests", "poll-requests: requested=", "§1.10"},
	{"poll-requests", "Warning [", "§1.10"},
}

// exits are the commands whose exit code the contract states.
var exits = []struct{ command, section string }{
	{"validate", "§1.1"}, {"plan", "§1.2"}, {"run-network", "§1.3"}, {"status", "§1.4"},
	{"force-unlock-network", "§1.5"}, {"resolve-node", "§1.6"}, {"record-job-unlock", "§1.7"},
	{"cancel-run", "§1.8"}, {"archive-run", "§1.9"}, {"poll-requests", "§1.10"},
	{"ksql-flow.run", "§7"}, {"ksql-flow.inspect-lock", "§7"}, {"ksql-flow.force-unlock-job", "§7"},
}

// order is an order the contract states, with words of the contract that state it.
type order struct{ name, section, quote string }

var orders = []order{
	{"archive-run.writes", "§1.9", "PUT `lifecycle_status=ARCHIVED`, `updated_at` with revision fencing → append `RUN_ARCHIVED`"},
	{"force-unlock-network.writes", "§1.5", "→ append `OPERATION_AUDIT` (`AUDIT_FAILED` if that fails after release)"},
	{"resolve-node.writes", "§1.6", "then sets the Node State to\nthe outcome"},
	{"poll-requests.claim-order", "§1.10", "order by 作成日時 asc, $id asc"},
	{"poll-requests.stale-order", "§1.10", "order by claim_heartbeat_at asc, $id asc"},
	{"poll-requests.claim-before-child", "§1.10", "else claim (revision PUT:"},
	{"poll-requests.finalize", "§1.10", "Finalize: re-GET by `$id`; must still be `ACCEPTED`"},
	{"status.runs", "§1.4", "List mode sorts Runs by `run_id`"},
	{"status.invocations", "§1.4", "($id order)"},
	{"ksql-flow.run.lock-before-sql", "§7", "Immediately after the insert (expected record revision 1) kSQL-Flow updates\n`runner_execution_started_at` and only then starts the first SQL statement"},
	{"ksql-flow.run.final-write", "§7", "At the end it writes the final `status`, clears `job_key` and copies it to\n`job_key_done`"},
	{"run-network.sequential", "§1.3.2", "One node at a time, stable topological order"},
	{"run-network.node-start", "§1.3.2", "create Attempt (`RUNNING`, `result_code=PENDING`, `state_revision_before` = state\n  revision) → Node State `RUNNING`"},
	{"run-network.stop-boundary", "§8", "STOP takes effect only at the next node boundary"},
}

// words splits a field list written across lines.
func words(s string) []string { return strings.Fields(s) }

// Universe is every subject the contract names, in a stable order (records, audit events,
// outputs, text heads, exit codes, orders).
func Universe() []Subject {
	var u []Subject
	for _, rt := range recordTypes {
		head := rt.app + "."
		if rt.name != "" {
			head += rt.name + "."
		}
		for _, f := range rt.fields {
			u = append(u, Subject{head + f, KindRecord, rt.section})
		}
	}
	for _, ev := range auditEvents {
		for _, f := range slices.Concat(ev.idents, ev.fields) {
			u = append(u, Subject{"audit." + ev.name + "." + f, KindAudit, ev.section})
		}
	}
	for _, o := range outputs {
		for _, f := range o.fields {
			u = append(u, Subject{"output." + o.name + "." + f, KindOutput, o.section})
		}
	}
	for _, t := range textHeads {
		u = append(u, Subject{"text." + t.command + ":" + quoteHead(t.head), KindText, t.section})
	}
	for _, e := range exits {
		u = append(u, Subject{"exit." + e.command, KindExit, e.section})
	}
	for _, o := range orders {
		u = append(u, Subject{"order." + o.name, KindOrder, o.section})
	}
	return u
}

// quoteHead writes a line head as a subject part: in double quotes, so a trailing space or
// a colon inside it stays visible.
func quoteHead(h string) string { return `"` + h + `"` }

// Observed are the namespaces of subjects an assertion may name that are not the product's
// contract outputs: what flowtest set up or saw itself (the process table, files on disk,
// the proxies' traffic, its own fixtures and faults). They are listed by `flowtest
// coverage` but are not part of the universe.
var Observed = []string{"harness.", "process.", "file.", "traffic."}

// InUniverse reports whether name is a subject of the universe.
func InUniverse(name string) bool {
	return slices.ContainsFunc(Universe(), func(s Subject) bool { return s.Name == name })
}

// Valid reports whether an assertion may name the subject: one of the universe, or one of
// an observed namespace.
func Valid(name string) bool {
	return InUniverse(name) || slices.ContainsFunc(Observed, func(p string) bool {
		return strings.HasPrefix(name, p) && len(name) > len(p)
	})
}

// subjectRE is the form of a subject (docs/coverage.md): a lower-case namespace, a dot, then
// no white space outside a quoted text head.
var subjectRE = regexp.MustCompile(`^[a-z][a-z0-9-]*\.(?:[^\s"]+|[^\s"]+:"[^"]*")$`)
