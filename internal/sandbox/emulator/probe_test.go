package emulator

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The emulator answers flowtest's token-permission probes as kintone does (the permission is
// checked before the request is validated: 403 GAIA_NO01 without it, 200 / 400 CB_VA01 with
// it), for every token set of every app, and the probes write nothing.
func TestTokenPermissionProbes(t *testing.T) {
	s := startTest(t, Options{})
	hc, err := kintoneapi.HTTPClientWithCA(s.CAFile())
	require.NoError(t, err)
	r := newRaw(t, s)
	for _, a := range s.Apps() {
		data, err := os.ReadFile(filepath.Join("apps", a.Role+".json"))
		require.NoError(t, err)
		var schema struct {
			Tokens map[string][]string `json:"tokens"`
		}
		require.NoError(t, json.Unmarshal(data, &schema))
		before := r.do("GET", "/k/v1/records.json?app="+a.ID+"&totalCount=true", a.Tokens["full"], nil).json["totalCount"]
		for set, perms := range schema.Tokens {
			has := map[string]bool{}
			for _, p := range perms {
				has[p] = true
			}
			for _, p := range []string{kintoneapi.PermView, kintoneapi.PermAdd, kintoneapi.PermEdit, kintoneapi.PermDelete} {
				ok, err := kintoneapi.ProbePermission(context.Background(), hc, s.BaseURL(), a.ID, a.Tokens[set], p)
				require.NoError(t, err, "%s/%s %s", a.Role, set, p)
				assert.Equal(t, has[p], ok, "%s token %q: %s", a.Role, set, p)
			}
		}
		after := r.do("GET", "/k/v1/records.json?app="+a.ID+"&totalCount=true", a.Tokens["full"], nil).json["totalCount"]
		assert.Equal(t, before, after, "%s: the probes wrote nothing", a.Role)
	}
	// A token of another app is an error, not a permission verdict.
	apps := s.Apps()
	_, err = kintoneapi.ProbePermission(context.Background(), hc, s.BaseURL(), apps[0].ID, apps[1].Tokens["full"], kintoneapi.PermView)
	assert.Error(t, err)
}
