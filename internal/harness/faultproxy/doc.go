// Package faultproxy is flowtest's language-neutral replacement for the original
// harness's Node fetch hook (fault-hook.mjs): an HTTP(S) reverse proxy that sits
// between one FlowNet process and kintone and can drop its traffic, hold single
// requests at barriers, and inject selective faults into single requests.
//
// # Placement: one proxy per FlowNet process
//
// The harness starts one Proxy for each FlowNet process it launches (a CLI run, a
// poller, archive-run …) and gives that process Proxy.URL() as its kintone base URL
// (KSQL_FLOWNET_BASE_URL). kSQL-Flow is configured separately (through its config
// file's base URL; the harness gives the scenario's kSQL-Flow processes a Proxy of their
// own), so only FlowNet's traffic passes a FlowNet process's proxy, as with the original
// hook (which only wrapped the FlowNet CLI). Children that FlowNet itself starts and that inherit its
// base URL (the poller's run-network children) go through the same proxy. The
// original's "each barrier fires at most once per process" therefore becomes "at most
// once per proxy": a poller and the runs it spawns share their barriers.
//
// # HTTPS
//
// With Options.TLS the proxy serves HTTPS with a leaf certificate for 127.0.0.1, ::1
// and localhost, signed by a proxy CA: Options.CA if given (share one CA across the
// proxies of a run with NewCA), otherwise a CA minted for this proxy. The CA
// certificate is written to CAFile() (PEM). Children must trust it: on the sandbox
// target the emulator has its own per-start CA, so give the child a bundle holding
// both (WriteCABundle(dst, emulatorCA, proxy.CAFile())) — for Node via
// NODE_EXTRA_CA_CERTS, for the Go sandbox processes via their CA-file setting. The
// upstream connection trusts Options.UpstreamCA (PEM file) in addition to the system
// roots. HTTP/2 is not offered to clients: "block" must be able to drop a connection
// (hijack), which HTTP/2 does not allow.
//
// # Modes
//
// pass forwards everything; block drops every request's connection without a
// response, so the client sees a network error, not an HTTP status; block-writes does
// that for every method except GET (the method as sent: a POST carrying
// X-HTTP-Method-Override: GET counts as a write, as it did for the fetch hook).
// SetMode takes effect for the next request that arrives; requests already forwarded
// or held are not affected. A failure to reach the upstream is also reported to the
// client as a dropped connection (not a 502), since that is what FlowNet would see
// without the proxy.
//
// # Barriers
//
// A Barrier matches on URL path (regexp), method, the app the request addresses
// (Match.App: the JSON body's "app", else the "app" query parameter, so a GET read
// matches too), and the JSON body's top-level "app" and "id" (string-compared, so 12 and "12" are equal) and the presence of a
// field under "record". Body.Key matches the value of the body's top-level updateKey: kintone's
// PUT names its record by "id" or by "updateKey" (FlowNet writes its own records by updateKey
// on record_key, its request-app records and a lock's release by id); given with ID, either
// matches, so one barrier holds the write of one record however it is named. Blocked requests never reach barriers. Phase "before" holds
// the request before forwarding; "after-success" forwards it and holds a 2xx response
// before returning it; a non-2xx response passes through and does not consume the
// barrier. A barrier fires at most once. It is released by Release(id) or by the
// creation of its release file (checked every 2 ms, the original polled every
// 100 ms). If neither comes within Options.BarrierTimeout (default 120 s), the held
// request fails (connection dropped) and the timeout is written to the traffic log.
// Closing the proxy fails held requests the same way. When several barriers match one
// request, every matching "before" barrier fires (in the order added) before
// forwarding, then every matching "after-success" one.
//
// # Faults
//
// A Fault (AddFault) takes selected requests and does one thing to each. Its
// FaultMatch checks, when set: the method as sent; a regexp on the path; the app the
// request addresses (the JSON body's "app", else the "app" query parameter, as for
// barriers); a record id (the body's "id", one of the bulk records[].id, one of a
// delete's "ids", or the "id" query parameter; 12 and "12" are equal); a record key (the
// value of the body's updateKey or of one of records[].updateKey; with a record id too,
// either matches); a field present
// under "record" or under one of records[].record; Write, only writes as kintone runs
// them (not GET; a POST with X-HTTP-Method-Override: GET is a read); and Nth, the first
// matching request it takes (1-based). It then takes Times matching requests (once by default, n, or
// Always) and stops. Actions:
//
//   - respond: answer with Status and a kintone error body {"code", "id", "message"
//     [, "errors"]} (kintone-api.md §7) without forwarding. The id is fresh per
//     response. Status and Code default from each other where one code fits (409 ⇒
//     GAIA_CO02, GAIA_DA02 and CB_VA01 ⇒ 400, see KintoneErrors); Message defaults to
//     the code's English text; a CB_VA01 without Errors names the matched field as a
//     duplicate ("record.<field>.value": "This value already exists in another
//     record."). A 5xx without a code sends kintone's plain-text outage body; Body
//     replaces the generated body verbatim. A 2xx status takes only a Body: the answer
//     kintone would give to a read in a state the scenario cannot write (a record of
//     another writer under a unique key, say), sent without forwarding the read.
//   - lose-response: forward, let the upstream answer (so it has applied the write),
//     then drop the connection instead of returning the response.
//   - reset: drop the connection before forwarding (one request; the mode stays).
//   - delay: hold for Delay, then forward. The client going away or the proxy closing
//     ends the hold (the request is then dropped); Delay may not exceed BarrierTimeout.
//
// Requests blocked by the mode never reach faults. Every matching request counts
// towards each fault's Nth, but at most one fault acts on a request: the first (in
// order added, in-process before control file) whose window includes it. Barriers and
// faults compose: a fault takes its request on arrival, "before" barriers hold it
// first, then the fault acts; a lose-response also waits for "after-success" barriers
// to release the response it will drop. Each action is a Firing (Firings,
// FaultFirings, WaitFirings): fault, action, which match it was, method, path, app,
// record id, the status sent or (lose-response) the upstream's, and when. A fault that
// took a request but could not act (its barrier timed out, the client left) records
// why in Firing.Error. A fault id is used once per proxy (RemoveFault disarms, the id
// stays taken). With no fault armed the proxy does no fault matching at all.
//
// # Control file
//
// Options.ControlFile accepts the original hook's control file so an operator can
// steer a proxy by hand: plain text pass | block | block-writes, or JSON
// {"mode": "...", "barriers": [{"id", "phase", "release", "match": {"path", "method",
// "body": {"app", "id", "key", "field"}}}], "faults": [{"id", "action", "times", "match":
// {"method", "path", "app", "record_id", "record_key", "field", "write", "nth"}, "status", "code", "message",
// "errors": {"<key>": ["<message>"]}, "body", "delay"}]}, where times is a number,
// "once" or "always", delay a Go duration ("1.5s"), and app and ids strings or numbers.
// It is re-read on every request. A change of its
// content (including it appearing or disappearing) sets the mode, so the last of
// SetMode and a file edit wins; a file that is missing, unparsable, or names an
// unknown mode means pass, as in the original. Barriers from the file form their own
// set, replaced on every change; their fired state is kept by id for the proxy's
// life. Faults from the file likewise form their own set, and their counts are kept by
// id: rewriting the file does not re-arm a fault that fired, a new id does. Invalid
// barrier and fault objects never match; a fault object is read strictly (an unknown
// key, e.g. a misspelt matcher, refuses it). ControlProblems names what the current
// file gets wrong and ValidateControl checks a content before it is written. Unlike
// AddBarrier, a file barrier whose release file already exists is accepted (the
// operator may pre-release it).
//
// # Logs and counters
//
// Two JSONL files in Options.LogDir: <name>.traffic.jsonl, one line per request
// (at, method, path, app, record_id, record_key — the updateKey value of a PUT by
// updateKey — fields — the field names under record or records[].record, never a value
// — targeted, blocked, heartbeat, status, duration_ms, an
// error kind when the request failed, e.g. a barrier timeout, and fault and fault_action
// when a fault took it, with the status sent or, for a lost response, the upstream's;
// Traffic returns the same lines in memory), and <name>.arrivals.jsonl,
// one line per barrier arrival (at, barrier_id, phase, method, path,
// response_status for after-success) — the original hook's fields. Lines are written by
// a background writer so no request waits on the disk; FlushLogs returns once every
// line queued so far is in the files (Close flushes too). Neither ever holds
// the query string, a header, a body or a token; error texts from the upstream
// connection are reduced to a fixed kind. "heartbeat" is a PUT whose JSON record has
// heartbeat_at. Counts splits requests into records (/k/v1/record.json and
// records.json, by method), file (/k/v1/file.json), other, with heartbeat as a subset
// of records PUT, for the control-plane call measurement scenario.
package faultproxy
