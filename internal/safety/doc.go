// Package safety holds flowtest's preflight checks: pure functions from
// configuration, selected scenarios, generated identifiers and rendered
// fixtures to a list of named checks, each PASS or FAIL with a reason.
//
// Nothing in this package sends a request, starts a process or reads a file;
// the one check that must read kintone (pending requests, rule 9) takes a
// small reader interface so the caller decides when the first request is sent.
// The package imports nothing of flowtest's own.
//
// # Ordering (decided here, used by the runner)
//
//  1. Static phase, Preflight(in): target, profile, deny list, identifiers,
//     fixtures, concurrency, token origins (.env hygiene) — and in live mode
//     also the target checks (base URL, app ids, tokens), because in live mode
//     every one of those values is known from the configuration.
//  2. Sandbox only: the runner starts the kintone emulator (bound to
//     127.0.0.1; it is the sandbox's own process and no request goes to any
//     tenant), reads the settings it reports, then calls
//     CheckTarget(in.WithResolved(NewResolved(url, apps))) — loopback base
//     URL, canonical and distinct app ids, write token != read-only token —
//     before any scenario process starts. The static checks of phase 1 have
//     passed before the emulator is started.
//  3. Live only, after 1 passed: CheckPendingRequests (rule 9) — the first
//     and only HTTP traffic before scenarios, read-only, to the E2E request app.
//  4. Only if every check so far passed: the run lock, then scenarios.
//
// Gate runs exactly this sequence with injected steps; a violation in any
// phase stops it before the next phase, so with a static violation the
// emulator is not started, kintone receives no request and Start is never
// called.
//
// Why the sandbox target checks run late: the emulator picks its port, app
// ids and tokens when it starts, so they cannot be checked earlier; checking
// the operator's live values in sandbox mode instead would refuse sandbox runs
// for settings the sandbox never uses.
package safety
