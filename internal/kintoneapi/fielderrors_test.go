package kintoneapi

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNamesField(t *testing.T) {
	dup := &APIError{Status: 400, Code: "CB_VA01", Errors: map[string]any{"record.record_key.value": map[string]any{"messages": []any{"duplicate"}}}}
	assert.True(t, NamesField(fmt.Errorf("add record: %w", dup), "record_key"), "found through wrapping")
	assert.False(t, NamesField(dup, "key"), "a field name is matched whole, not as a substring")
	assert.False(t, NamesField(&APIError{Status: 400, Code: "CB_VA01"}, "record_key"))
	assert.False(t, NamesField(errors.New("record.record_key.value"), "record_key"), "only kintone's field errors count")
}
