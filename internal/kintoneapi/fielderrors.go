package kintoneapi

import (
	"errors"
	"strings"
)

// NamesField reports whether err is a kintone API error whose field errors (the `errors`
// object of a CB_VA01, keyed "record.<field>.value") name field: it tells a uniqueness
// refusal of that field from an invalid value elsewhere in the record.
func NamesField(err error, field string) bool {
	var ae *APIError
	if !errors.As(err, &ae) {
		return false
	}
	for k := range ae.Errors {
		if strings.Contains(k, "."+field+".") {
			return true
		}
	}
	return false
}
