package emulator

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The operation-request app as the poller and the harness meet it: real field types with
// option validation, and system fields filled from the caller (an API token: Administrator).
func TestRequestAppFieldsAndCreator(t *testing.T) {
	f := newFixture(t, Options{})
	add := func(token string, record map[string]any) resp {
		return f.c.do("POST", "/k/v1/record.json", token, map[string]any{"app": f.req.ID, "record": record})
	}
	for _, tc := range []struct {
		name   string
		record map[string]any
		key    string
	}{
		{"unknown request type", rec("request_type", "CANCEL", "reason", "r"), "record.request_type.value"},
		{"unknown request state", rec("request_type", "START", "reason", "r", "request_state", "PAUSED"), "record.request_state.value"},
		{"malformed scheduled_for", rec("request_type", "START", "reason", "r", "scheduled_for", "not-a-timestamp"), "record.scheduled_for.value"},
		{"cancel option", rec("request_type", "START", "reason", "r", "cancel_requested", []string{"取消", "x"}), "record.cancel_requested.values[1].value"},
		{"reason required", rec("request_type", "START"), "record.reason.value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := add(f.req.Tokens["full"], tc.record)
			assert.Equal(t, 400, r.status, "%s", r.body)
			assert.Equal(t, "CB_VA01", r.code())
			assert.Equal(t, []string{tc.key}, r.errKeys())
		})
	}
	// Whatever token writes, the creator is Administrator and the creation time a minute.
	for _, tok := range []string{"full", "requester"} {
		r := add(f.req.Tokens[tok], rec("request_type", "RERUN", "run_id", "netrun_x", "reason", "r",
			"scheduled_for", "2026-08-15T00:00:00.000Z", "cancel_requested", []string{"取消"}))
		require.Equal(t, 200, r.status, "%s", r.body)
		g := f.c.get("/k/v1/record.json", f.req.Tokens["read"], url.Values{"app": {f.req.ID}, "id": {r.json["id"].(string)}})
		record := g.json["record"]
		assert.Equal(t, map[string]any{"code": "Administrator", "name": "Administrator"}, fieldValue(record, codeCreator), tok)
		assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:00Z$`, fieldValue(record, codeCreatedAt))
		assert.Equal(t, "2026-08-15T00:00:00Z", fieldValue(record, "scheduled_for"))
		assert.Equal(t, []any{"取消"}, fieldValue(record, "cancel_requested"))
		assert.Equal(t, "REQUESTED", fieldValue(record, "request_state"))
	}
}
