package explorer

import (
	"bytes"
	"fmt"
	"html/template"
	"sort"
)

// HTML is the exploration's index.html: one self-contained page with what the README says,
// plus every schedule (its verdict, branch, time and a link to its run's own page).
func HTML(rep *Report) (string, error) {
	type branch struct {
		Name  string
		Count int
	}
	type schedule struct {
		ScheduleRun
		Verdict string
		Writes  int
		Link    string
	}
	type violation struct {
		Violating
		Failure string
		Order   []string
	}
	var page struct {
		*Report
		BranchList []branch
		Rows       []schedule
		Found      []violation
	}
	page.Report = rep
	for n, c := range rep.Branches {
		page.BranchList = append(page.BranchList, branch{n, c})
	}
	sort.Slice(page.BranchList, func(i, j int) bool { return page.BranchList[i].Name < page.BranchList[j].Name })
	for _, s := range rep.Schedules {
		row := schedule{ScheduleRun: s, Verdict: verdictOf(s), Writes: len(s.Order)}
		if s.Archive != "" {
			row.Link = s.Archive + "/index.html"
		}
		page.Rows = append(page.Rows, row)
	}
	for _, v := range rep.Violations {
		x := violation{Violating: v, Failure: v.Schedule.failure()}
		for i, sig := range v.Replay {
			x.Order = append(x.Order, fmt.Sprintf("%d. %s", i+1, sig))
		}
		page.Found = append(page.Found, x)
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, page); err != nil {
		return "", fmt.Errorf("render the exploration's page: %w", err)
	}
	return b.String(), nil
}

func verdictOf(s ScheduleRun) string {
	switch {
	case len(s.Violations) > 0:
		return "VIOLATION " + s.failure()
	case !s.Passed:
		return "FAILED " + s.failure()
	}
	return "passed"
}

var pageTemplate = template.Must(template.New("explore").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>flowtest explore {{.Scenario}}</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}.bad{color:#b00}code{font-size:90%}</style>
</head><body>
<h1>Exploration of {{.Scenario}}</h1>
<table>
{{if .Product}}<tr><th>product</th><td>{{.Product}}</td></tr>
{{end}}<tr><th>strategy</th><td>{{.Strategy}}, seed {{.Seed}}</td></tr>
<tr><th>schedules run</th><td>{{.SchedulesRun}}</td></tr>
<tr><th>distinct write orders</th><td>{{.DistinctOrder}} ({{.Duplicates}} seen before)</td></tr>
<tr><th>passed with every invariant</th><td>{{.Passed}}</td></tr>
<tr><th>violations</th><td>{{len .Violations}}</td></tr>
<tr><th>elapsed</th><td>{{printf "%.0f" .Elapsed}} s ({{printf "%.1f" .PerMinute}} schedules/min)</td></tr>
{{if .Exhausted}}<tr><th>exhausted</th><td>every order within the strategy's bound ran</td></tr>{{end}}
</table>
{{if .BranchList}}<h2>Outcome branches</h2>
<table><tr><th>branch</th><th>schedules</th></tr>
{{range .BranchList}}<tr><td>{{.Name}}</td><td>{{.Count}}</td></tr>
{{end}}</table>{{end}}
{{if .Found}}<h2>Violating schedules</h2>
{{range .Found}}<h3 class="bad">schedule {{.Schedule.N}}: {{.Failure}}</h3>
{{range .Schedule.Violations}}<p>{{.Invariant}}: {{.Detail}}</p>{{end}}
{{if .Schedule.Reason}}<p>{{.Schedule.Reason}}</p>{{end}}
<p>replay: <code>{{.Command}}</code> ({{if .Shrunk}}{{len .Replay}} releases forced, shrunk from {{.ShrunkFrom}}{{else}}not shrunk: another schedule of this failure was{{end}})</p>
{{if .Gherkin}}<p>as a scenario whose barriers force it: <a href="{{.Gherkin}}">{{.Gherkin}}</a></p>{{else if .GherkinWhy}}<p>no generated scenario: {{.GherkinWhy}}</p>{{end}}
{{if .Shrunk}}<ol style="list-style:none">{{range .Order}}<li><code>{{.}}</code></li>{{end}}</ol>{{end}}
{{end}}{{end}}
<h2>Schedules</h2>
<table><tr><th>n</th><th>writes</th><th>order</th><th>verdict</th><th>branch</th><th>forced</th><th>s</th><th>run</th></tr>
{{range .Rows}}<tr><td>{{.N}}</td><td>{{.Writes}}</td><td>{{if .Duplicate}}seen before{{else}}new{{end}}</td><td{{if ne .Verdict "passed"}} class="bad"{{end}}>{{.Verdict}}</td><td>{{.Branch}}</td><td>{{.Forced}}</td><td>{{printf "%.1f" .Seconds}}</td><td>{{if .Link}}<a href="{{.Link}}">record</a>{{end}}</td></tr>
{{end}}</table>
</body></html>
`))
