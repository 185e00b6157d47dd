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
//	poll-requests [--check]
//	cancel-run --run-id <id> [--release] --reason-file <path>
//	archive-run <network> --run-id <id> --reason-file <path> [--profile <p>]
//	force-unlock-network <network_id> --profile <p> --expected-owner-invocation-id <id>
//	            --reason-file <path> --evidence-ref <ref> --stop-confirmed-by <who>
//	            --stop-evidence-ref <ref> --stop-method manual|local_pid|cloud_run_job_execution
//	resolve-node --run-id <id> --node-id <id> --to SUCCESS|FAILED|CANCELLED --reason-file <path>
//	            --evidence-ref <ref> --stop-confirmed-by <who> --stop-evidence-ref <ref>
//	            [--approved-by <who>] [--manual-completion | --compensation]
//	record-job-unlock --result-file <path> --run-id <id> --node-id <id> --reason-file <path>
//	            --evidence-ref <ref> --stop-confirmed-by <who>
//
// Each command is one entry in the commands map (main.go) with the same signature.
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
// (LOCK:<N1>, released to LOCKDONE:<hash>), CANCEL_REQUEST (CANCEL:<run_id>, cancel-run).
// Audit app: RUN_INVOCATION (INV:<invocation_id>), NODE_ATTEMPT (ATT:<attempt_id>),
// ATTEMPT_RESOLUTION (RES:<hash>, resolve-node), OPERATION_AUDIT (OP:<event_id>) for
// reconciliation repairs, force releases (net_unlock_<uuid>) and recorded job-lock
// recoveries (job_unlock_<uuid>, record-job-unlock; its decisions are in jobunlock.go). Field codes are those of
// internal/sandbox/emulator/apps/{state,audit}.json (product-contract §4).
//
// # Decisions where the contract is silent
//
//   - Validation paths are JSON-pointer style ("/nodes/1/depends_on/0", "/" for the
//     document), as a JSON-schema validator reports instancePath. YAML syntax errors are
//     YAML_PARSE_ERROR, repeated mapping keys DUPLICATE_KEY, an unreadable definition file
//     NETWORK_FILE_UNREADABLE (§12 gap 4). depends_on may be omitted (= []), trigger_rule
//     defaults to all_success, idempotent is required.
//   - Missing environment variables are `Error [CONFIG_MISSING]` naming every variable.
//   - State-app records carry the fields the real FlowNet 1.0.0 writes, no more: a Run's
//     profile is the profile of its resolved_profile_snapshot (RUN_ID_MISMATCH,
//     MAX_ACTIVE_RUNS and status tell profiles apart by it; the app's `profile` field is the
//     lock's); a Node State has no created_at; a CANCEL_REQUEST is record_key, record_type,
//     run_id and its status_reason JSON (no created_at/updated_at). NETWORK_LOCK carries
//     exactly the product's fields (§3.7); its released tombstone names no network, as on a
//     live tenant.
//   - Repository codes (store.go, §2.6): 409 GAIA_CO02 is REVISION_CONFLICT; 400 GAIA_DA02
//     re-reads the record — a newer revision or a missing record is REVISION_CONFLICT, the
//     revision unchanged fails closed as REMOTE_ERROR and is not resent. An insert's CB_VA01
//     re-reads by record_key: a record with our identity field (node_state_id,
//     node_attempt_id, invocation_id, run_id: values only this writer has) is ours, another
//     record is DUPLICATE_RECORD, and no record at all is DUPLICATE_RECORD too when kintone's
//     field errors name record_key (the holder went away; it was still not ours), else the
//     remote error (another field is invalid). The Run INSERT's DUPLICATE_RECORD reaches
//     the operator as `Error [DUPLICATE_RECORD]` (not RUN_ALREADY_EXISTS: runnetwork.go).
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
//   - Only a RUNNING Node State names its active_attempt_id: every write to another status
//     clears it, as the real FlowNet does (orphan adjudication reads it of RUNNING states
//     only; resolve-node and status find a terminal node's Attempt by latest_attempt_no).
//   - In RERUN_FROM mode the selected node and its descendants are reset to WAITING; other
//     WAITING nodes run too (they are pending work), FAILED ones outside the selection stay.
//   - The Invocation is created with the sets admission foresees and closed with the ones
//     the scheduler settled (selected, preserved, blocked; its reason suffixed with orphan
//     adjudications, the retry brake or an accepted hold): invsets.go. A plain resume of a
//     network without inputs creates it before the resumable checks, and admission recomputes
//     a stale Run aggregate with a RUN_AGGREGATE_RECOMPUTED audit: reconcile.go. The Run
//     aggregate is written after every settled node and at the end, not when a node starts.
//   - kSQL-Flow children write stdout/stderr to <KSQL_FLOW_WORKDIR>/logs/<attempt>.log
//     rather than a pipe, so an orphaned child can finish after FlowNet dies (m6-05/m6-06).
//   - Lease monitor (as the real FlowNet 1.0.0's): its timer starts with the scheduler, and
//     it also ticks (a fenced heartbeat; one in flight is shared) before the Run's start,
//     before each node, before each aggregate write and before each resume/rerun reset,
//     orphan adjudication and Invocation finalisation write; a failed tick stops the run.
//   - Lease loss: the scheduler stops before the next node; one successful heartbeat
//     confirms the final write and the Invocation closes CANCELLED /
//     NETWORK_LEASE_INTERRUPTED, an ordinary finish (aggregate reported, lock released with
//     that status and code); otherwise it is an error and the Invocation is left RUNNING for
//     the next resume to finalise (with an OPERATION_AUDIT RECONCILIATION_REPAIR).
//   - Control-plane drain: every insert/update of run-network is fenced by the
//     lease (store.leaseGone): transport failures are retried every 2 s, but nothing is sent
//     once the last confirmed lease write plus the lease has passed, unless one heartbeat
//     confirms the lock first (FINAL_WRITE_CONFIRMED). So an outage FlowNet does not survive
//     leaves every record as it was (m7-02's outage case), and one bridged before the
//     deadline persists the finished node and closes NETWORK_LEASE_INTERRUPTED.
//   - Stop signal (m7-04): run-network has no handler; SIGTERM (CTRL_BREAK on Windows) ends
//     it at once, as the original recorded for the Node CLI (simple termination): attempt,
//     node state and Invocation stay RUNNING for force-unlock and orphan adjudication.
//   - Canonical keys NFC-normalise by refusing identifiers with combining marks (no
//     normaliser in the standard library; every identifier we generate is ASCII).
//   - CSV inputs (io.go): path rules under <KSQL_FLOWNET_IO_DIR>/in (INPUT_PATH_REJECTED,
//     INPUT_FILE_MISSING: the Attempt ends FAILED before its start marker), sha256
//     baselines passed as --import-csv/--expected-import-sha256 and written into the
//     RUNNING Attempt (KSQL_FLOWNET_INPUT_BASELINE) before its start marker, receipts of any
//     valid result checked; CSV outputs (io.go): path rules under <KSQL_FLOWNET_IO_DIR>/out
//     (OUTPUT_PATH_REJECTED), --export-csv, receipts checked (also against the file on disk);
//     the Attempt's error_message ends as kSQL-FlowNet 1.0.0's IO audit summary
//     (KSQL_FLOWNET_INPUT_AUDIT / _OUTPUT_AUDIT / _IO_AUDIT, iosummary.go), and a resume
//     compares the inputs with the latest Attempt's recorded baseline.
//
// # poll-requests (product-contract §1.10, §3.4; pollconfig.go, pollrequest.go, poller.go,
// pollchild.go)
//
// One cycle, in the product's order: REQUESTED page (作成日時, $id), stale recovery of ACCEPTED
// claims, invalid and withdrawn REQUESTED records, then each valid one claimed with a
// revision-fenced PUT, processed while claim_heartbeat_at is renewed, and finalized. Its
// children (status, run-network, cancel-run, archive-run) are this CLI again: the executable
// and `flownet` (cli.self), with the poller's whole environment plus
// KSQL_FLOWNET_REQUESTED_BY = app-request:<$id>:<encodeURIComponent(作成者.code)>. Decisions
// where the contract is silent:
//   - The request app unreadable (its own read fails) is `Error [REQUEST_APP_UNREADABLE]`,
//     exit 1, for the cycle and for --check alike. The message holds the HTTP status only —
//     never kintone's body or code, the URL or the token. Missing variables are
//     CONFIG_MISSING; every allow-list problem has the product's config error code.
//   - Counters, as the product counts: requested = valid REQUESTED records read (withdrawn
//     ones too); invalid = invalid ones read (withdrawn, rejected or left alike); skipped =
//     unidentifiable ones; claimed = claims won; completed = claimed requests whose outcome
//     was written; cancelled = withdrawals written; stale = STALE rejections.
//   - A claim conflict is 409 GAIA_CO02 or 400 GAIA_DA02; any other claim failure is left
//     for the next cycle with a warning. Heartbeats carry the revision the poller last wrote;
//     on a conflict (the requester's cancel flag) it re-reads and goes on only while the claim
//     is still its own (ACCEPTED, its host, its claimed_at minute).
//   - requested_by is computed (and REQUESTED_BY_INVALID decided) for every type, START too:
//     a START's Invocation carries the request like any other.
//   - Stale recovery of a START derives its key from the allow-listed definition (business_key,
//     else scheduled_for) and asks `status --business-key`; no Run (a START that never got
//     to create one), a failed status or a live owner leaves it ACCEPTED. The STALE message
//     names the claim, the Run and says not to request another operation until the outcome is
//     confirmed.
//   - The reason file is os.CreateTemp's (mode 0600) in the OS temp dir, removed when the
//     child ends; each child's stdout and stderr are kept up to 64 KiB.
//   - The kintone emulator records every API-token write as 作成者 {"code":"Administrator"}
//     (kintone's own behaviour), so a request made through a token correlates as
//     app-request:<$id>:Administrator.
//
// A Run whose business key is derived from --scheduled-for stores the instant as its as_of
// (the cron path and a scheduled START), as a correction key with --scheduled-for does.
//
// # Operator commands (opts.go, cancel.go, forceunlock.go, resolve.go)
//
// Every check of cancel-run, force-unlock-network and resolve-node comes before the
// command's first write, so every refusal writes nothing. Decisions where the contract is
// silent:
//   - cancel-run: an empty or unreadable --reason-file is an argument error. The hold's
//     status_reason JSON always carries all eight keys (null when unset). A STOP that
//     re-opens a RELEASED hold clears its accepted_at and release fields. The printed
//     revision is the CANCEL_REQUEST's kintone $revision ("none" when there is no record).
//     A write that loses a revision race to the scheduler's acceptance is decided again on a
//     fresh read (at most three times).
//   - force-unlock-network: an unreadable lease_expires_at counts as a live lease. local_pid
//     compares the owner's host with KSQL_FLOWNET_HOST (else the OS hostname) and asks the
//     OS with signal 0 (Windows: OpenProcess; a pid that does not exist or has exited is
//     gone). cloud_run_job_execution never calls Google here: without
//     KSQL_FLOWNET_GCP_ACCESS_TOKEN it is STOP_NOT_CONFIRMED "… is not configured", and with
//     one it is STOP_NOT_CONFIRMED too (the sandbox cannot read an execution's state, and an
//     unknown state fails closed). The audit JSON's post_release_revision is a number;
//     record_id is the lock's $id; the audit record has no run_id.
//   - resolve-node: the ATTEMPT_RESOLUTION record carries the app's fields and, in its
//     reason, what the app has no field for as JSON (resolution_type, reason,
//     stop_confirmed_by, stop_evidence_ref, resolved_at: the keys the real FlowNet writes).
//     The Node State gets status = outcome, status_reason = resolution type, an empty
//     active_attempt_id and blocked_by, and business revision + 1; the Run's aggregate is
//     left for the next run-network to recompute. The printed revision is the Node State's
//     business revision.
//
// # archive-run (CLOSE; archive.go)
//
// Product-contract §1.9: the Network lock (owner = the event id `archive_<uuid>`, owner
// instance = KSQL_FLOWNET_HOST else the hostname, as the real archive-run names it, the
// YAML's lease, never a take-over), the lease monitor, a tick (fenced heartbeat) before each write, a
// revision-fenced PUT of lifecycle_status=ARCHIVED and updated_at, the RUN_ARCHIVED
// OPERATION_AUDIT (OP:<event_id>, result_code RUN_ARCHIVED, run_id, resolved_at =
// archived_at, reason = the audit object: event_id, event_type, run_id, result_code,
// requested_by, reason, archived_at, previous_status, run_revision_before,
// service_principal), and the release into a LOCKDONE: tombstone (SUCCESS / NORMAL) whatever
// happened. Decisions where the contract is silent:
//   - run_revision_before is the Run's kintone $revision read inside the lock (NETWORK_RUN
//     has no business revision field); run_revision is the $revision the PUT returned.
//   - The Run must belong to the YAML's network and the profile (else RUN_READ_FAILED, as
//     is a Run that does not exist). ALREADY_ARCHIVED is decided before the status checks.
//   - RUN_LIVE cannot happen here: a live owner holds the lock, so the CLOSE meets
//     LOCK_CONFLICT first (the poller's pre-check decides RUN_LIVE before starting it).
//   - A failed fencing check before the Run PUT is REJECTED/LEASE_INTERRUPTED; after it,
//     ARCHIVED/PENDING/LEASE_INTERRUPTED_AFTER_ARCHIVE (and, the lock being no longer ours,
//     lock_released:false).
//   - The Run PUT's recovery (putArchived): a lost response re-reads the Run — ARCHIVED
//     continues to the audit, ACTIVE gets one retry of the same revision-fenced PUT after a
//     fencing check (a second ACTIVE after a lost retry is REJECTED/ARCHIVE_WRITE_FAILED with
//     the revision re-read, as the real FlowNet 1.0.0 answers), an unreadable Run is UNCONFIRMED. A
//     409 re-reads: ARCHIVED is ALREADY_ARCHIVED, anything else UNCONFIRMED. A 400 GAIA_DA02
//     is judged like the 409 when the revision moved; with the revision unchanged nothing was
//     written and it fails closed, REJECTED/ARCHIVE_WRITE_FAILED, not resent. Any other
//     error response is ARCHIVE_WRITE_FAILED.
//   - The audit (recordAudit): a refused insert, or a lost response with no record under
//     OP:<event_id>, is PENDING/ARCHIVE_AUDIT_FAILED and is not resent (the result names the
//     event; an operator completes it). A lost response (or CB_VA01) with a record under the
//     key compares event_id, run_id, event_type, previous_status and run_revision_before:
//     equal is RECORDED, different PENDING/AUDIT_CONFLICT.
//   - stderr gets one line `archive-run: <outcome>: <detail>` (never the reason); stdout the
//     JSON line. Exit 0 only for ARCHIVED+RECORDED+released and ALREADY_ARCHIVED+released.
package flownet
