// Package redact keeps secrets, request reason bodies and real app ids out of everything a
// run leaves behind: Redactor rewrites text and JSON (every encoding of a secret, JSON held in
// text, app ids in app positions), and Verify scans a finished folder for what should have
// been rewritten. It imports nothing of flowtest, so the console, the archive writer and the
// merge can share one redactor and its matcher without pulling in the archive's record types;
// the archive (package results) decides which of its fields go through it.
package redact
