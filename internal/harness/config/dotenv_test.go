package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Malformed .env content is refused with file:line, one line each; what godotenv
// accepts silently but is almost always a mistake is refused too.
func TestDotEnvRefusalsNameTheLine(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"no equals", "A=1\nJUST_A_NAME\n", `.env:2: "JUST_A_NAME" is not NAME=VALUE`},
		{"no name", "A=1\n=3\n", ".env:2: a line starts with '=' or ':' but has no variable name"},
		{"space in name", "MY VAR=1\n", `.env:1: variable name "MY VAR" has " "`},
		{"dash in name", "# c\nMY-VAR=1\n", `.env:2: variable name "MY-VAR" has "-"`},
		{"digit first", "1A=2\n", `.env:1: variable name "1A" starts with a digit`},
		{"unterminated double", "A=1\nB=\"x\nC=2\n", `.env:2: the value of B starts with " and never ends`},
		{"unterminated single", "A='x\n", `.env:1: the value of A starts with ' and never ends`},
		{"text after quote", "A=\"x\" B=1\n", `.env:1: text "B=1" after the closing quote of A`},
		{"set twice", "A=1\n\nexport A=2\n", ".env:3: A is set twice (first at line 1)"},
		{"set twice crlf", "A=1\r\nB=2\r\nA=3\r\n", ".env:3: A is set twice (first at line 1)"},
		// Issue 42: a UTF-16 file was refused as `variable name "\xff\xfeA\x00" has "ÿ"`, and a NUL
		// byte, which no environment variable can hold, was accepted.
		{"UTF-16", "\xff\xfeA\x00=\x001\x00\n\x00", ".env:1: the file is UTF-16 (it starts with a UTF-16 byte order mark); save it as UTF-8"},
		{"UTF-16 big endian", "\xfe\xff\x00A\x00=\x001", ".env:1: the file is UTF-16"},
		{"NUL in value", "A=1\nB=x\x00y\n", ".env:2: a NUL byte, which no environment variable can hold (is the file UTF-16?)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseDotEnv("x/.env", []byte(c.text))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "x/"+c.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestDotEnvAccepts(t *testing.T) {
	m, err := ParseDotEnv(".env", []byte("\uFEFF# comment\n\nexport A=1\nB = two # trailing comment\nC=\"multi\nline\" # c\nD='x'\nE=\nF: yaml-style\nG=\"q\\\"uote\"\nH=a#b\n"))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"A": "1", "B": "two", "C": "multi\nline", "D": "x", "E": "", "F": "yaml-style", "G": "q\"uote", "H": "a#b"}, m)

	// The shipped template parses.
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "env.e2e.example"))
	require.NoError(t, err)
	_, err = ParseDotEnv("env.e2e.example", b)
	require.NoError(t, err)
}

func TestReadDotEnvExplicitFileMustExist(t *testing.T) {
	missing := filepath.Join(t.TempDir(), ".env")
	m, found, err := ReadDotEnv(missing, false)
	require.NoError(t, err, "the default .env may be absent")
	assert.False(t, found)
	assert.Empty(t, m)
	_, _, err = ReadDotEnv(missing, true)
	require.ErrorContains(t, err, "no such file")

	_, err = Load(Options{EnvFile: missing, EnvFileRequired: true})
	require.Error(t, err)
	_, err = Load(Options{EnvFile: writeEnv(t, "A=1\nA=2\n")})
	require.ErrorContains(t, err, ".env:2: A is set twice")
}

func TestConcurrencyAtLeastOne(t *testing.T) {
	for _, v := range []string{"0", "-1", "two", ""} {
		if v == "" {
			continue // empty is unset
		}
		_, err := Load(Options{OSEnv: []string{VarConcurrency + "=" + v}})
		require.ErrorContains(t, err, "at least 1", v)
	}
	_, err := Load(Options{Flags: map[string]string{"concurrency": "0"}})
	require.ErrorContains(t, err, "at least 1")
	cfg, err := Load(Options{Flags: map[string]string{"concurrency": "1"}})
	require.NoError(t, err)
	assert.Equal(t, 1, cfg.Concurrency)
}
