// Package flownet is the sandbox's reference kSQL-FlowNet CLI, run as
// `flowsandbox flownet <command>`. It keeps the real product's contract (records, keys,
// codes, stdout/stderr lines, exit codes; product-contract.md §0–§9) so that the step
// definitions written against it also drive the real `node dist/cli/index.js`.
//
// # Commands
//
//	validate <network>
//	plan <network> [--business-key <k>] [--scheduled-for <ts>]
//	run-network <network> [--business-key <k>] [--scheduled-for <ts>] [--resume]
//	            [--resume-run <run_id>] [--rerun-from <node_id>] [--json]
//	            [--ksql-flow-bin <p>] [--ksql-flow-config <p>] [--ksql-flow-workdir <d>]
//	status <network_id> --profile <p> [--run-id <id> | --business-key <k>] [--json]
//
// poll-requests, cancel-run, archive-run, force-unlock-network, resolve-node and
// record-job-unlock are later issues; each is one more entry in the commands map with the
// same signature and reuses store, networkLock, execution and the status builder.
//
// # Environment
//
// Exactly the variables of product-contract §6 (run-network: KSQL_FLOWNET_PROFILE,
// KSQL_FLOWNET_BASE_URL, state/audit app ids and tokens, KSQL_FLOW_BIN[_ARGS],
// KSQL_FLOW_CONFIG, KSQL_FLOW_WORKDIR, KSQL_FLOW_LOG_APP_ID/_API_TOKEN, optional
// KSQL_FLOW_GRACE_PERIOD_MS, KSQL_FLOWNET_REQUESTED_BY (then USERNAME), KSQL_FLOWNET_HOST,
// KSQL_FLOWNET_OWNER_INSTANCE_ID, KSQL_FLOWNET_IO_DIR). SSL_CERT_FILE names the emulator's
// CA; it is loaded explicitly so the sandbox works on every OS.
//
// # Records
//
// State app: NETWORK_RUN (record_key = R1), NODE_STATE (STATE:<S1>), NETWORK_LOCK
// (LOCK:<N1>, released to LOCKDONE:<hash>), read-only CANCEL_REQUEST (CANCEL:<run_id>).
// Audit app: RUN_INVOCATION (INV:<invocation_id>), NODE_ATTEMPT (ATT:<attempt_id>),
// OPERATION_AUDIT (OP:<event_id>) for reconciliation repairs. Field codes are those of
// sandbox/kintone/apps/{state,audit}.json (product-contract §4).
//
// # Decisions where the contract is silent
//
//   - Validation paths are JSON-pointer style ("/nodes/1/depends_on/0", "/" for the
//     document), as a JSON-schema validator reports instancePath. YAML syntax errors are
//     YAML_PARSE_ERROR, repeated mapping keys DUPLICATE_KEY, an unreadable definition file
//     NETWORK_FILE_UNREADABLE (§12 gap 4). depends_on may be omitted (= []), trigger_rule
//     defaults to all_success, idempotent is required.
//   - Missing environment variables are `Error [CONFIG_MISSING]` naming every variable.
//   - NETWORK_RUN also carries `profile` (the field exists in the app) so RUN_ID_MISMATCH,
//     MAX_ACTIVE_RUNS and status can tell profiles apart. NETWORK_LOCK carries exactly the
//     product's fields (§3.7); its released tombstone names no network, as on a live tenant.
//   - Reads by a non-unique text field (run_id, network_id, attempt_id) page through every
//     match and keep the exact ones in Go (store.findExact): kintone's = / in on such a
//     field is a token match, so "k" also finds "k_trial2".
//   - Admission order inside the lock (§12 gap 1): Run lookup → SUCCESS (NOOP or
//     RERUN_FROM_SUCCESS_RUN) → RUN_ALREADY_EXISTS when resume was not asked → ARCHIVED or
//     resume_allowed=false → hold → --rerun-from checks. NEW checks max_active_runs first.
//     describe-profile and inspect-job run inside the lock (NEW) so the snapshot matches
//     what is stored; on resume describe-profile is compared by canonical-JSON SHA-256
//     (PROFILE_SNAPSHOT_MISMATCH).
//   - Execution bundle: a deterministic zip (fixed timestamps) of manifest.json,
//     network.yaml and sql/<sha256>.sql; every load verifies the zip hash against
//     source_bundle_sha256 and each file against the manifest, then extracts to
//     <KSQL_FLOW_WORKDIR>/bundles/<run_id>/<sha>/ and runs those files.
//   - The FlowNet start marker is the Attempt's execution_started_at, written before
//     kSQL-Flow is launched; so a child that leaves no result is UNKNOWN /
//     NO_EXECUTION_RESULT unless the launch itself failed (CANCELLED / PREPARE_FAILED).
//     runner_execution_started_at is copied from the JOB log.
//   - A node back to WAITING after PREPARE_FAILED has its active_attempt_id cleared;
//     terminal Node States keep it (resolve-node and orphan adjudication read it).
//   - In RERUN_FROM mode the selected node and its descendants are reset to WAITING; other
//     WAITING nodes run too (they are pending work), FAILED ones outside the selection stay.
//   - kSQL-Flow children write stdout/stderr to <KSQL_FLOW_WORKDIR>/logs/<attempt>.log
//     rather than a pipe, so an orphaned child can finish after FlowNet dies (m6-05/m6-06).
//   - Lease loss: the scheduler stops before the next node; one successful heartbeat
//     confirms the final write and the Invocation closes CANCELLED /
//     NETWORK_LEASE_INTERRUPTED, an ordinary finish (aggregate reported, lock released with
//     that status and code); otherwise it is an error and the Invocation is left RUNNING for
//     the next resume to finalise (with an OPERATION_AUDIT RECONCILIATION_REPAIR).
//   - Canonical keys NFC-normalise by refusing identifiers with combining marks (no
//     normaliser in the standard library; every identifier we generate is ASCII).
//   - Nodes with CSV inputs/outputs are refused (CSV_IO_UNSUPPORTED) until the CSV issue
//     wires --import-csv and receipts.
package flownet
