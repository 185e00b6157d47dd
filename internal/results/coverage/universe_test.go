package coverage

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// contractText is product-contract.md as the repository keeps it (testdata/, so that the
// universe is checked on every machine, CI's included, where the shared reference folder is
// not beside the checkout). TestContractCopyIsCurrent ties that copy to the shared one.
func contractText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "product-contract.md"))
	if err != nil {
		t.Fatalf("the repository's copy of the contract: %v", err)
	}
	return string(b)
}

// TestContractCopyIsCurrent: the copy in testdata is the shared reference's
// product-contract.md (beside the repository, or FLOWTEST_CONTRACT), byte for byte, so a
// change of the contract fails here until the copy, and with it the universe, is updated.
// Without the shared folder there is nothing to compare with: the test says so and skips.
func TestContractCopyIsCurrent(t *testing.T) {
	paths := []string{os.Getenv("FLOWTEST_CONTRACT"),
		filepath.Join("..", "..", "..", "..", "shared", "reference", "product-contract.md"),
		filepath.Join("..", "..", "..", "..", "..", "shared", "reference", "product-contract.md")}
	for _, p := range paths {
		if p == "" {
			continue
		}
		shared, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if string(shared) != contractText(t) {
			t.Fatalf("%s differs from testdata/product-contract.md: copy it over, then bring the universe (universe.go) and docs/coverage.md up to date", p)
		}
		return
	}
	t.Skip("the shared product-contract.md is not beside the repository (set FLOWTEST_CONTRACT): the copy in testdata was not compared")
}

var headingRE = regexp.MustCompile(`(?m)^#{2,4} ([0-9]+(?:\.[0-9]+)*)\.? `)

// section is the text of the contract's section num ("4.1", "1"), its subsections included.
func section(t *testing.T, doc, num string) string {
	t.Helper()
	locs := headingRE.FindAllStringSubmatchIndex(doc, -1)
	for i, l := range locs {
		if doc[l[2]:l[3]] != num {
			continue
		}
		end := len(doc)
		for _, m := range locs[i+1:] {
			n := doc[m[2]:m[3]]
			if n != num && !strings.HasPrefix(n, num+".") {
				end = m[0]
				break
			}
		}
		return doc[l[0]:end]
	}
	t.Fatalf("product-contract.md has no section %s", num)
	return ""
}

var (
	backtickRE = regexp.MustCompile("`([^`]+)`")
	parenRE    = regexp.MustCompile(`\([^)]*\)`)
)

// tableFirstColumn is every backticked name in the first column of the section's first
// table (parenthesised notes dropped: "`作成者` (creator `.code`)" names 作成者).
func tableFirstColumn(text string) []string {
	var names []string
	rows := 0
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "|") {
			if rows > 0 {
				break
			}
			continue
		}
		rows++
		cells := strings.Split(line, "|")
		if rows <= 2 || len(cells) < 2 {
			continue // header and separator
		}
		for _, m := range backtickRE.FindAllStringSubmatch(parenRE.ReplaceAllString(cells[1], ""), -1) {
			names = append(names, strings.Fields(m[1])[0])
		}
	}
	return names
}

func sortedSet(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// Every field named in §4's tables is a field of a record type of the universe, and every
// field of the universe's record types is in §4's table of its app.
func TestRecordFieldsAreSection4s(t *testing.T) {
	doc := contractText(t)
	for app, num := range map[string]string{"state": "4.1", "audit": "4.2", "request": "4.3", "joblog": "4.4"} {
		var ours []string
		for _, rt := range recordTypes {
			if rt.app == app {
				ours = append(ours, rt.fields...)
			}
		}
		want := sortedSet(tableFirstColumn(section(t, doc, num)))
		if len(want) < 10 {
			t.Fatalf("§%s: only %d fields read from its table: %v", num, len(want), want)
		}
		if got := sortedSet(ours); !slices.Equal(got, want) {
			t.Errorf("§%s (%s): the universe's fields\n %v\ndiffer from the contract's table\n %v", num, app, got, want)
		}
	}
}

// The fields of each audit event's object are the list the contract gives after its anchor.
func TestAuditEventFieldsAreTheContracts(t *testing.T) {
	doc := contractText(t)
	for _, ev := range auditEvents {
		text := section(t, doc, strings.TrimPrefix(ev.section, "§"))
		i := strings.Index(text, ev.anchor)
		if i < 0 {
			t.Errorf("%s: anchor %q not in %s", ev.name, ev.anchor, ev.section)
			continue
		}
		m := backtickRE.FindStringSubmatch(text[i+len(ev.anchor):])
		var want []string
		for _, item := range strings.Split(m[1], ",") {
			want = append(want, strings.Fields(item)[0])
		}
		if got, want := sortedSet(ev.fields), sortedSet(want); !slices.Equal(got, want) {
			t.Errorf("%s: universe %v, contract %v", ev.name, got, want)
		}
		for _, id := range ev.idents {
			if !strings.Contains(text, "`"+id+" ") {
				t.Errorf("%s: %s is not named with its value (`%s …`) in %s", ev.name, id, id, ev.section)
			}
		}
	}
}

// run-network's JSON fields are the rows of §1.3's JSON table.
func TestRunNetworkJSONIsTheContractsTable(t *testing.T) {
	text := section(t, contractText(t), "1.3")
	text = text[strings.Index(text, "JSON output (one line):"):]
	if got, want := sortedSet(outputs[0].fields), sortedSet(tableFirstColumn(text)); !slices.Equal(got, want) {
		t.Errorf("run-network JSON: universe %v, contract %v", got, want)
	}
}

// Every other output field, text head and stated order is written in its section: a
// subject the contract does not name cannot enter the universe.
func TestEveryOutputHeadAndOrderIsInItsSection(t *testing.T) {
	doc := contractText(t)
	in := func(sec, s string) bool {
		flat := strings.Join(strings.Fields(section(t, doc, strings.TrimPrefix(sec, "§"))), " ")
		return strings.Contains(flat, strings.Join(strings.Fields(s), " ")) || strings.Contains(flat, s)
	}
	for _, o := range outputs {
		for _, f := range o.fields {
			parts := strings.Split(f, ".")
			leaf := strings.TrimSuffix(parts[len(parts)-1], "[]")
			if !in(o.section, leaf) {
				t.Errorf("output %s field %s: %q not in %s", o.name, f, leaf, o.section)
			}
		}
	}
	for _, h := range textHeads {
		if !in(h.section, h.head) {
			t.Errorf("text head %q not in %s", h.head, h.section)
		}
	}
	for _, o := range orders {
		if !in(o.section, o.quote) {
			t.Errorf("order %s: %q not in %s", o.name, o.quote, o.section)
		}
	}
}

func TestSubjectNamesAreUniqueAndWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Universe() {
		if seen[s.Name] {
			t.Errorf("subject %s twice", s.Name)
		}
		seen[s.Name] = true
		if !subjectRE.MatchString(s.Name) {
			t.Errorf("subject %q is not of the form docs/coverage.md gives", s.Name)
		}
	}
	if !Valid("process.ksql-flow.children") || Valid("process.") || Valid("state.NODE_STATE.colour") {
		t.Error("Valid accepts a subject outside the universe and the observed namespaces, or refuses one inside")
	}
}
