package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimeoutScale(t *testing.T) {
	cfg, err := Load(Options{})
	require.NoError(t, err)
	assert.Equal(t, 1.0, cfg.TimeoutScale, "default")

	cfg, err = Load(Options{EnvFile: writeEnv(t, VarTimeoutScale+"=2\n"), OSEnv: []string{VarTimeoutScale + "= 3 "}})
	require.NoError(t, err)
	assert.Equal(t, 3.0, cfg.TimeoutScale, "OS environment over .env")

	cfg, err = Load(Options{OSEnv: []string{VarTimeoutScale + "=3"}, Flags: map[string]string{"timeout-scale": "1.5"}})
	require.NoError(t, err)
	assert.Equal(t, 1.5, cfg.TimeoutScale, "flag over OS environment")

	cfg, err = Load(Options{OSEnv: []string{VarTimeoutScale + "="}})
	require.NoError(t, err)
	assert.Equal(t, 1.0, cfg.TimeoutScale, "empty is unset")

	for _, bad := range []string{"0", "-1", "three", "NaN", "Inf", "1,5"} {
		_, err := Load(Options{OSEnv: []string{VarTimeoutScale + "=" + bad}})
		require.Error(t, err, bad)
		assert.Equal(t, `FLOWTEST_TIMEOUT_SCALE (os-env): "`+bad+`" is not a positive decimal (e.g. 3 for a slow live tenant)`, err.Error())
	}
}
