// Package faultproxy is flowtest's language-neutral replacement for the original
// harness's Node fetch hook (fault-hook.mjs): an HTTP(S) reverse proxy that sits
// between one FlowNet process and kintone and can drop its traffic or hold single
// requests at barriers.
//
// # Placement: one proxy per FlowNet process
//
// The harness starts one Proxy for each FlowNet process it launches (a CLI run, a
// poller, archive-run …) and gives that process Proxy.URL() as its kintone base URL
// (KSQL_FLOWNET_BASE_URL). kSQL-Flow is configured separately with the direct URL,
// so only FlowNet's traffic passes the proxy, as with the original hook (which only
// wrapped the FlowNet CLI). Children that FlowNet itself starts and that inherit its
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
// field under "record". Blocked requests never reach barriers. Phase "before" holds
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
// # Control file
//
// Options.ControlFile accepts the original hook's control file so an operator can
// steer a proxy by hand: plain text pass | block | block-writes, or JSON
// {"mode": "...", "barriers": [{"id", "phase", "release", "match": {"path", "method",
// "body": {"app", "id", "field"}}}]}. It is re-read on every request. A change of its
// content (including it appearing or disappearing) sets the mode, so the last of
// SetMode and a file edit wins; a file that is missing, unparsable, or names an
// unknown mode means pass, as in the original. Barriers from the file form their own
// set, replaced on every change; their fired state is kept by id for the proxy's
// life. Invalid barrier objects never match. Unlike AddBarrier, a file barrier whose
// release file already exists is accepted (the operator may pre-release it).
//
// # Logs and counters
//
// Two JSONL files in Options.LogDir: <name>.traffic.jsonl, one line per request
// (at, method, path, app, record_id, fields — the field names under record or
// records[].record, never a value — targeted, blocked, heartbeat, status, duration_ms, and
// an error kind when the request failed, e.g. a barrier timeout; Traffic returns the same
// lines in memory), and <name>.arrivals.jsonl,
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
