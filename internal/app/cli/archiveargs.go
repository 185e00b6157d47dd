package cli

// What the archive commands (verify, pack, merge, diff) share: their arguments and leak-scan
// flags, the schema check.

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/ksqlflow/flowtest/internal/harness/config"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/pack"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// archiveFlags are what the archive commands (verify, pack, merge) share: where the secrets of
// their leak scan come from.
type archiveFlags struct{ envFile string }

func (f *archiveFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.envFile, "env-file", ".env", "dotenv file whose secrets the leak scan looks for too (OS environment wins)")
}

// scanInputs are the secrets (OS environment, then the dotenv file) and app ids a leak scan
// looks for; a dotenv file the user named must exist.
func (f *archiveFlags) scanInputs(uses map[string]flagUse) (map[string]string, []string, error) {
	envFile := f.envFile
	_, named := uses["env-file"]
	if named {
		if err := existingFile("--env-file", envFile); err != nil {
			return nil, nil, err
		}
	}
	env := envMap(os.Environ())
	dot, _, err := config.ReadDotEnv(envFile, named)
	if err != nil {
		return nil, nil, refuse("%v", err)
	}
	for k, v := range dot {
		if _, set := env[k]; !set {
			env[k] = v
		}
	}
	var appIDs []string
	for _, a := range safety.AppCatalog() {
		if v := env[a.Name]; v != "" {
			appIDs = append(appIDs, v)
		}
	}
	return env, appIDs, nil
}

// archiveArgs requires min to max (-1: any number of) folder or pack arguments of an archive
// command; false when it refused them (with the usage line).
func archiveArgs(inv invocation, args []string, min, max int) bool {
	if n := len(args); n < min || (max >= 0 && n > max) {
		refuseUsage(inv.stderr, inv.usage)
		return false
	}
	return true
}

// schemaProblems prints every schema problem of an archive folder or pack ("schema: file:
// pointer: message") and reports whether there was one; one it cannot read is one too.
func schemaProblems(dir string, stdout, stderr io.Writer) bool {
	validate := results.ValidateArchive
	if st, err := os.Stat(dir); err == nil && !st.IsDir() && pack.IsPack(dir) {
		validate = results.ValidatePack
	}
	probs, err := validate(dir)
	if err != nil {
		fmt.Fprintf(stderr, "archive verify: schema check: %v\n", err)
		return true
	}
	for _, p := range probs {
		fmt.Fprintln(stdout, "schema: "+p.String())
	}
	if len(probs) > 0 {
		fmt.Fprintf(stderr, "archive verify: %d schema problem(s) in %s\n", len(probs), dir)
		return true
	}
	fmt.Fprintf(stdout, "archive verify: every JSON file of %s matches its schema\n", dir)
	return false
}
