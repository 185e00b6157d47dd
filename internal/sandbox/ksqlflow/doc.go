// Package ksqlflow is the sandbox kSQL-Flow: a Go implementation of the
// `ksql-flow.execution/v1` contract (product-contract.md §7) and of the small SQL subset
// our fixture jobs use. It runs as `flowsandbox ksql-flow <command>`; FlowNet (real or
// sandbox) starts it as KSQL_FLOW_BIN=flowsandbox, KSQL_FLOW_BIN_ARGS=ksql-flow.
//
// # Commands
//
// capabilities --json, describe-profile, inspect-job, run (orchestrator and standalone
// mode), validate, inspect-lock, force-unlock-job; flags, JSON documents, exit codes and
// result codes as in the contract and the real kSQL-Flow 0.9.0's dist: describe-profile's
// ids are integers; inspect-job exits 0 with its diagnostics in the document (an unreadable
// file or config exits 1); every result carries input_files and output_files. Machine output is one JSON object and LF on stdout;
// progress and errors go to stderr.
//
// # Config file (JSON)
//
// The real kSQL-Flow 0.9.0 format (its dist/config.js loadConfig; config.go says what is
// checked and refused, in the real's words):
//
//	{
//	  "profiles": {
//	    "sandbox": {
//	      "baseUrl": "https://127.0.0.1:43123",          // or env:NAME; trailing "/" dropped
//	      "timezone": "Asia/Tokyo",                      // IANA; FlowNet requires one
//	      "apps": {                                      // logical name -> app
//	        "顧客管理": {"id": 105, "tokens": ["env:KSQL_FLOW_CUSTOMERS_API_TOKEN"]},
//	        "案件管理": {"id": 106, "tokens": ["env:KSQL_FLOW_DEALS_API_TOKEN"]},
//	        "KSQL_FLOW_JOB_LOG": {"id": 104, "tokens": ["env:KSQL_FLOW_LOG_WRITE_API_TOKEN"]}
//	      },
//	      "logApp": "KSQL_FLOW_JOB_LOG",                 // a logical name of apps
//	      "limits": {"maxApiCalls": 10000, "maxReadRows": 200000, "maxTempRows": null, "batchTimeoutSec": 3600},
//	      "retry": {"maxAttempts": 1, "initialDelayMs": 0, "maxDelayMs": 0, "respectRetryAfter": true},
//	      "httpTimeoutMs": 60000
//	    }
//	  }
//	}
//
// (Comments above are for the reader; the file itself is plain JSON — a copy without them is
// testdata/config.example.json.) Decisions:
//   - A logical app name is what follows `LAPP_` in SQL: `LAPP_顧客管理` reads apps["顧客管理"].
//     The runner maps emulator roles to logical names: customers -> "顧客管理",
//     deals -> "案件管理", csv -> "KSQL_FLOW_TEST_CSV1" (the name the CSV fixtures use),
//     log -> "JOB_LOG" (named by logApp).
//   - Unknown keys are refused at every level, as the real refuses them; so is the
//     pre-0.9.0 sandbox format (formatVersion, appId/token, logApp as an object, caFile),
//     with a hint. Every env:NAME is resolved at load (an unset variable is an error, as in
//     the real); a literal token is taken as the real takes it. An app's tokens (at most 9)
//     are sent comma-joined. The log app token needs view/add/edit (the emulator's
//     `ksqlflow` token); business apps need view.
//   - Limits: positive integers or null (no limit); maxReadRows at most 200000;
//     batchTimeoutSec defaults to 3600, retry to 5 attempts / 1000 ms / 60000 ms,
//     httpTimeoutMs to 30000, as in the real. describe-profile reports them (null for none)
//     and never a token.
//   - What the stand-in does not do: auth types password/basic (refused, saying so),
//     notifications (checked, never sent), logging (checked, no JSONL log), guestSpaceId
//     (checked and reported, the API paths are not the guest space's).
//   - TLS: the emulator's CA is loaded explicitly from SSL_CERT_FILE (Go honours
//     SSL_CERT_FILE by itself only on Unix); the certificates of NODE_EXTRA_CA_CERTS are added
//     to those roots as the Node kSQL-Flow adds them to its own (an unloadable file is ignored
//     with a warning), so a proxy trusted through that variable alone is trusted here too.
//
// # Execution (run)
//
// Order: flags (usage errors: exit 1, no result document) → config, SQL parse and static
// checks (VALIDATION_ERROR, executionStarted=false, with line and column) → local lock
// `.ksql/lock-<profile>.json` in the working directory → JOB log lock (INSERT with unique
// job_key=<profile>:<job_id>, status RUNNING; a held key → LOCK_CONFLICT exit 5) → durable
// start marker runner_execution_started_at (expected revision 1) → statements in order →
// final JOB log update (status, job_key cleared and copied to job_key_done, counts).
// The local lock is taken in orchestrator mode as well: scenarios.md §2.1.4 shows an
// orchestrator-mode holder colliding locally with a same-cwd process. No JOB log record is
// written for a LOCK_CONFLICT (contract gap 7). A first SIGINT/SIGTERM (Windows: Ctrl-C or
// CTRL_BREAK, which Go delivers as os.Interrupt) stops at the next statement or page
// boundary → CANCELLED, exit 3; a second exits 3 at once without a result. The job timeout
// is the `timeout:` header, else limits.batchTimeoutSec → EXECUTION_TIMEOUT.
// Read failures map to AUTH_ERROR (token rejected: GAIA_IA02, GAIA_NO01, 401/403, …) or
// API_ERROR; error.code then carries kintone's code. NO_DATA is never produced (every
// successful job is OK). CSV import: IMPORT INTO with --import-csv/--expected-import-sha256
// (csvimport.go); CSV export: --export-csv <sink>=<abs path> exports temp table #<sink>
// fail-closed after the last statement, --export-encoding utf8|sjis (csvexport.go).
//
// # Lock recovery (inspect-lock, force-unlock-job)
//
// inspect-lock reads the JOB log row whose job_key equals --job-key: locked true/false, or
// null with error LOCK_QUERY_UNAVAILABLE (exit 3) when the log app cannot be read.
// force-unlock-job decisions where the contract is silent: UNCONFIRMED (exit 3) means the
// release was not confirmed — either --reason/--confirmed-by/--evidence-ref is missing
// (nothing is read or written) or the JOB log could not be read or the update's outcome
// stayed unknown; a malformed key or a relative --evidence-ref is bad input (exit 1).
// NOT_RUNNING: a row holds the key but its status is not RUNNING; it is left untouched.
// RELEASED is a revision-fenced update (status FAILED, job_key cleared and copied to
// job_key_done, finished_at, log_detail prefixed `LOCK_RECOVERY event=job_unlock_<uuid> …`);
// a revision change in between is CONFLICT (exit 5).
//
// Diagnostic codes (inspect-job, validate, VALIDATION_ERROR messages): KSQL1001 syntax,
// KSQL1002 outside the subset, KSQL1003 header, KSQL1101 unknown logical app, KSQL1102 temp
// table order, KSQL1103 columns. The real product's numbering is not public; only KSQL1306
// (nondeterminism) is known, and no supported construct is nondeterministic.
//
// # SQL subset (dialect 1)
//
//	-- @ksql name: <job_id>        header lines at the top: name, timeout (seconds),
//	-- @ksql timeout: 600          dialect (only 1), depends_on (comma list, reported by
//	-- @ksql dialect: 1            inspect-job only)
//	statement := select | CREATE TEMP TABLE #t AS select | ASSERT scalar op scalar, 'message' | import
//	import    := IMPORT INTO LAPP_<app> FROM CSV '<input>' ENCODING (UTF8|SJIS) BY NAME
//	             ON DUPLICATE (<key>) OVERWRITE ON ERROR SKIP INTO #err   (csvimport.go)
//	select    := SELECT item {, item} FROM (LAPP_<app> | #t) [WHERE cond] {UNION ALL SELECT …}
//	item      := field [AS alias] | COUNT(*) [AS alias] | SUM(field) [AS alias]
//	cond      := field op literal | field [NOT] IN (literal, …) | cond AND cond | cond OR cond | (cond)
//	scalar    := literal | (select)          op := = != <> < <= > >=
//	literal   := number | 'string' | @MONTH_START() | @NEXT_MONTH_START()   (dates as 'YYYY-MM-DD')
//
// Statements end with ';'. Field codes are bare (`$id`, `受注予定日`). A number literal compares
// numerically (an empty field never matches); a string compares as text, which orders DATE
// and UTC DATETIME values, so a date range is `f >= '2026-08-01' and f < '2026-09-01'`.
// Aggregates cannot be mixed with plain fields (no GROUP BY). An ASSERT side that is NULL
// (empty subquery) makes the ASSERT fail. @MONTH_START() is the first day of the --as-of
// month in the profile timezone. Reads fetch all records of the app ($id keyset paging,
// 500 per request) with only the referenced fields and filter locally, so one SELECT arm
// over a seed app is one request. Everything else (JOIN, GROUP BY, ORDER BY, DISTINCT,
// LIKE, BETWEEN, SELECT *, INSERT/UPDATE/DELETE, block comments, quoted identifiers)
// is refused at parse time with a VALIDATION_ERROR naming the construct.
package ksqlflow
