package flownet

import (
	"fmt"
	"strings"
)

// plan is `plan <network> [--scheduled-for <ts>] [--business-key <key>]`: the business key
// and the stable topological plan, read-only. Unlike run-network it never generates the
// @manual- key.
func (c *cli) plan(args []string) int {
	var problems, positional []string
	var in KeyInput
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "--business-key", "--scheduled-for":
			if (a == "--business-key" && in.HasBusinessKey) || (a == "--scheduled-for" && in.HasScheduledFor) {
				problems = append(problems, a+" was specified more than once")
			}
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "--") {
				problems = append(problems, a+" requires a value")
				continue
			}
			i++
			if a == "--business-key" {
				in.BusinessKey, in.HasBusinessKey = args[i], true
			} else {
				in.ScheduledFor, in.HasScheduledFor = args[i], true
			}
		default:
			positional, problems = positionalOrUnknown(a, positional, problems)
		}
	}
	if len(positional) != 1 {
		problems = append(problems, "exactly one <network> path is required")
	}
	if len(problems) > 0 {
		return c.argumentError("plan", problems)
	}
	n, errs := LoadNetwork(positional[0])
	if len(errs) > 0 {
		return c.networkInvalid(errs)
	}
	key, err := DeriveBusinessKey(n, in, c.now())
	if err != nil {
		return c.fail(err, "BUSINESS_KEY_INVALID")
	}
	order, _ := TopoOrder(n.Nodes)
	fmt.Fprintf(c.stdout, "Business key: %s\n", key.BusinessKey)
	fmt.Fprintln(c.stdout, "Execution plan:")
	for i, id := range order {
		nd := n.Node(id)
		deps := "-"
		if len(nd.DependsOn) > 0 {
			deps = strings.Join(nd.DependsOn, ",")
		}
		fmt.Fprintf(c.stdout, "%d. %s | job_id=%s | idempotent=%t | depends_on=%s\n", i+1, nd.ID, nd.JobID, nd.Idempotent, deps)
	}
	return 0
}
