package flownet

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// The operator commands (cancel-run, force-unlock-network, resolve-node) share one option
// reader: value options and flags as the contract's convention says (§1: a repeated option is
// an error, a value may not start with "--"), positional arguments kept in order.

// optionSpec names a command's options.
type optionSpec struct {
	command  string   // for "Invalid <command> arguments:"
	values   []string // options that take a value
	flags    []string // options without a value
	required []string // value options that must be given
	// positional is how many positional arguments the command takes, and what they are
	// called in the problem line ("<network_id>").
	positional     int
	positionalName string
}

// options is what was given.
type options struct {
	values     map[string]string
	flags      map[string]bool
	positional []string
}

func (o options) get(name string) string { return o.values[name] }

// parseOptions reads args against spec and lists every problem.
func parseOptions(spec optionSpec, args []string) (options, []string) {
	o := options{values: map[string]string{}, flags: map[string]bool{}}
	var problems []string
	seen := map[string]bool{}
	isValue := map[string]bool{}
	for _, v := range spec.values {
		isValue[v] = true
	}
	isFlag := map[string]bool{}
	for _, f := range spec.flags {
		isFlag[f] = true
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case isValue[a] || isFlag[a]:
			if seen[a] {
				problems = append(problems, a+" was specified more than once")
			}
			seen[a] = true
			if isFlag[a] {
				o.flags[a] = true
				continue
			}
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "--") {
				problems = append(problems, a+" requires a value")
				continue
			}
			i++
			o.values[a] = args[i]
		case strings.HasPrefix(a, "-"):
			problems = append(problems, "unknown option "+a)
		default:
			o.positional = append(o.positional, a)
		}
	}
	if len(o.positional) != spec.positional {
		if spec.positional == 0 {
			problems = append(problems, "unexpected argument(s): "+strings.Join(o.positional, " "))
		} else {
			problems = append(problems, fmt.Sprintf("exactly one %s is required", spec.positionalName))
		}
	}
	for _, r := range spec.required {
		if _, ok := o.values[r]; !ok && !seen[r] {
			problems = append(problems, r+" is required")
		}
	}
	return o, problems
}

// positionalOrUnknown files an argument the hand-written parsers (plan, run-network, status)
// have no case for: a positional argument, or an unknown option if it starts with "-".
func positionalOrUnknown(a string, positional, problems []string) ([]string, []string) {
	if strings.HasPrefix(a, "-") {
		return positional, append(problems, "unknown option "+a)
	}
	return append(positional, a), problems
}

// argumentError prints the contract's argument-error block and returns exit 1.
func (c *cli) argumentError(command string, problems []string) int {
	fmt.Fprintf(c.stderr, "Invalid %s arguments:\n", command)
	for _, p := range problems {
		fmt.Fprintln(c.stderr, "- "+p)
	}
	return 1
}

// networkInvalid prints the network validation errors of validate and plan and returns exit 1.
func (c *cli) networkInvalid(errs []ValidationError) int {
	fmt.Fprintf(c.stderr, "Network validation failed with %d error(s):\n", len(errs))
	for _, e := range errs {
		fmt.Fprintln(c.stderr, e.String())
	}
	return 1
}

// fail prints `Error [<CODE>]: <message>` (fallback when err carries no code) and returns 1.
func (c *cli) fail(err error, fallback string) int {
	fmt.Fprintf(c.stderr, "Error [%s]: %s\n", errCode(err, fallback), err.Error())
	return 1
}

// readReasonFile reads a --reason-file; its trimmed content is the reason.
// parseWithReason parses a command whose --reason-file must name a readable, non-empty
// file (archive-run, cancel-run: a bad one is an argument error) and reads the reason.
func parseWithReason(spec optionSpec, args []string) (options, string, []string) {
	o, problems := parseOptions(spec, args)
	if len(problems) > 0 {
		return o, "", problems
	}
	reason, err := readReasonFile(o.get("--reason-file"))
	switch {
	case err != nil:
		problems = append(problems, err.Error())
	case reason == "":
		problems = append(problems, "--reason-file "+o.get("--reason-file")+" is empty")
	}
	return o, reason, problems
}

func readReasonFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--reason-file %s cannot be read: %v", path, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// findRunByID reads the NETWORK_RUN with run_id (exactly; nil when there is none).
func findRunByID(ctx context.Context, st *store, runID string) (kintoneapi.Record, error) {
	return st.findOneExact(ctx, st.stateApp, `record_type in ("NETWORK_RUN") and run_id in (`+q(runID)+`)`, "run_id", runID,
		func(n int) error { return coded("MULTIPLE_RUNS", "%d NETWORK_RUN records have run_id %s", n, runID) })
}
