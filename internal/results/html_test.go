package results

import (
	"bytes"
	"context"
	"encoding/xml"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// timedScenario is a scenario with everything the timeline draws: steps, two processes (one
// killed), node attempts (minute-precision times, times with seconds, kSQL-Flow's result
// times), waits and a barrier hold.
func timedScenario(id, status string) *Scenario {
	s := sampleScenario(id, status)
	s.Name = `cancel <script>alert(1)</script> & claim race`
	t0 := s.Start
	s.End = t0.Add(4 * time.Second)
	s.Steps = []Step{
		{Keyword: "Given ", Text: "a FAILED run", Status: "passed", DurationMS: 1200, Start: t0},
		{Keyword: "When ", Text: "two pollers run", Status: "passed", DurationMS: 2000, Start: t0.Add(1200 * time.Millisecond)},
		{Keyword: "Then ", Text: "exactly one claim wins", Status: map[bool]string{true: "passed", false: "failed"}[status == StatusPassed], DurationMS: 600, Start: t0.Add(3200 * time.Millisecond)},
	}
	killed := Process{Name: "poller B", Argv: []string{"flowsandbox", "flownet", "poll-requests"}, Signal: "SIGKILL", Start: t0.Add(1300 * time.Millisecond), DurationMS: 1500}
	s.Processes = append([]Process{{Name: "poller A", Argv: []string{"flowsandbox", "flownet", "poll-requests"}, ExitCode: intp(0), Start: t0.Add(1250 * time.Millisecond), DurationMS: 1800}}, killed)
	minute := t0.Truncate(time.Minute)
	s.Attempts = []Attempt{
		{Node: "KSQL_FLOW_TEST_261129101129_ab12_p2_16_02_n1_extract", AttemptNo: 1, Status: "SUCCESS", ResultCode: "OK", StartedAt: minute, FinishedAt: minute, DurationSec: 0.6},
		{Node: "KSQL_FLOW_TEST_261129101129_ab12_p2_16_02_n2_load", AttemptNo: 1, Status: "FAILED", ResultCode: "ASSERT_FAILED", StartedAt: t0.Add(2 * time.Second), FinishedAt: t0.Add(2500 * time.Millisecond), DurationSec: 0.5},
		{Node: "KSQL_FLOW_TEST_261129101129_ab12_p2_16_02_n3_check", AttemptNo: 1, Status: "SUCCESS", ResultCode: "OK", StartedAt: minute, FinishedAt: minute, DurationSec: 0.2,
			Result: &AttemptResult{StartedAt: t0.Add(2600 * time.Millisecond), FinishedAt: t0.Add(2800 * time.Millisecond), DurationMS: 200}},
	}
	s.Waits = []Wait{
		{Name: "RunStatus", What: "run FAILED", LimitMS: 60000, ElapsedMS: 900, Outcome: WaitReached, Checks: 4, Start: t0.Add(200 * time.Millisecond)},
		{What: "poller B exit", LimitMS: 1000, ElapsedMS: 1000, Outcome: WaitTimedOut, Checks: 10, Start: t0.Add(1400 * time.Millisecond)},
		{What: "claim visible", LimitMS: 5000, ElapsedMS: 300, Outcome: WaitReached, Checks: 2, Start: t0.Add(1500 * time.Millisecond)},
	}
	s.Barriers = []BarrierArrival{
		{ID: "claim-put", Phase: "before", Method: "PUT", Path: "/k/v1/record.json", Status: 0, At: t0.Add(1600 * time.Millisecond), ReleasedAt: t0.Add(2600 * time.Millisecond)},
		{ID: "finished-at", Phase: "after-success", Method: "PUT", Path: "/k/v1/record.json", Status: 200, At: t0.Add(3000 * time.Millisecond)},
	}
	return s
}

func indexArchive(t *testing.T, dir string) string {
	t.Helper()
	a, err := Create(dir, "gate-r2", time.Date(2026, 11, 29, 10, 11, 29, 0, time.UTC), testRedactor())
	require.NoError(t, err)
	a.SetGate(&GateRecord{Gate: "r2", Title: "v1.0.0 gate", Definition: "features/gates/r2.yaml", Required: "@p2-16", SUT: GateSUT{Commit: "c1"},
		CarryOver: []CarryOverRule{{Series: "csv1", Paths: []string{"src/io/"}, Justification: "IO unchanged", Holds: false, Why: "no --since-archive"}},
		Scenarios: []GateScenario{{ID: "p2-16-01", Series: "p2-16", Required: true}, {ID: "p2-16-02", Series: "p2-16", Required: true}}})
	require.NoError(t, a.WriteScenario(timedScenario("p2-16-01", StatusPassed)))
	require.NoError(t, a.WriteScenario(timedScenario("p2-16-02", StatusFailed)))
	require.NoError(t, a.Finish(&Run{Target: "sandbox", Command: []string{"flowtest", "gate", "run", "r2"}, End: time.Date(2026, 11, 29, 10, 11, 40, 0, time.UTC)}))
	return a.Dir()
}

// index.html holds no script and loads nothing: no external style sheet, font, image or link;
// every SVG is well-formed; scenario text is escaped.
func TestIndexIsSelfContained(t *testing.T) {
	dir := indexArchive(t, t.TempDir())
	page, err := os.ReadFile(filepath.Join(dir, IndexFile))
	require.NoError(t, err)
	p := string(page)
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "src=", "url(", "@import", "http://", "https://"} {
		assert.NotContains(t, p, bad)
	}
	// Links stay on the page or lead to a record of the archive beside it.
	records := 0
	for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(p, -1) {
		if strings.HasPrefix(m[1], "#") {
			require.Contains(t, p, ` id="`+m[1][1:]+`"`, "link %q has its anchor on the page", m[1])
			continue
		}
		require.Regexp(t, `^scenarios/[a-z0-9-]+\.json$`, m[1], "link %q leaves the archive", m[1])
		assert.FileExists(t, filepath.Join(dir, filepath.FromSlash(m[1])))
		records++
	}
	assert.Equal(t, 4, records, "each record linked from its results row and its section")
	assert.Contains(t, p, "cancel &lt;script&gt;alert(1)&lt;/script&gt; &amp; claim race")
	svgs := regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(p, -1)
	require.Len(t, svgs, 2, "one timeline per scenario that ran")
	for _, svg := range svgs {
		dec := xml.NewDecoder(strings.NewReader(svg))
		for {
			_, err := dec.Token()
			if err != nil {
				assert.ErrorContains(t, err, "EOF", "SVG is well-formed XML")
				break
			}
		}
		for _, lane := range []string{"steps", "process poller A — exit 0", "process poller B — SIGKILL", "node …b12_p2_16_02_n1_extract #1", "node …9_ab12_p2_16_02_n2_load #1", "waits", "barrier claim-put", "barrier finished-at"} {
			assert.Contains(t, svg, ">"+lane+"</text>", "lane %q", lane)
		}
		assert.Contains(t, svg, `stroke-dasharray`, "minute-precision attempt drawn dashed")
		assert.Equal(t, 1, strings.Count(svg, `stroke-dasharray`), "the attempt with result times is drawn solid")
		assert.Contains(t, svg, "10:11:31.600–10:11:31.800 UTC (200 ms); source: kSQL-Flow&#39;s Execution Result", "at its result times")
		assert.Contains(t, svg, "released after 1.0 s", "the barrier hold runs to its release")
	}
	assert.Contains(t, p, "Release gate r2: FAIL")
	// The failed scenario's failing assertion is said once, in its section, which its results
	// row links to; the passed one's is one click away, under its steps.
	assert.Contains(t, p, `<a href="#f-p2-16-02">the failure</a>`)
	assert.NotContains(t, p, `href="#f-p2-16-01"`)
	assert.Equal(t, 1, strings.Count(p, "<tr><td>NETWORK_RUN count in app=app:state</td><td>1</td><td>2</td></tr>\n"), "the failed assertion once")
	assert.Contains(t, p, "<tr><td>NETWORK_RUN count in app=app:state</td><td>1</td><td>2</td><td>yes</td></tr>", "the pass's assertion in its details")
}

// findBrowser looks for a Chromium: FLOWTEST_CHROMIUM, then the distribution's names.
func findBrowser() string {
	if p := os.Getenv("FLOWTEST_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// passingArchive is a record of one passed scenario, without a gate.
func passingArchive(t *testing.T, dir string) string {
	t.Helper()
	a, err := Create(dir, "p2-16-01", time.Date(2026, 11, 29, 10, 11, 29, 0, time.UTC), testRedactor())
	require.NoError(t, err)
	require.NoError(t, a.WriteScenario(timedScenario("p2-16-01", StatusPassed)))
	require.NoError(t, a.Finish(&Run{Target: "sandbox", SUT: SUTIdentity{Commit: "c1"}, End: time.Date(2026, 11, 29, 10, 11, 40, 0, time.UTC)}))
	return a.Dir()
}

// index.html of a passing and of a failing record renders in a real headless Chromium: each
// screenshot is not blank and shows its record's colours (the passes' green, the failure's
// red, the timelines' bars). Skipped where no browser exists (install the distribution's
// `chromium`, or point FLOWTEST_CHROMIUM at one). The screenshots are kept in
// FLOWTEST_SCREENSHOT_DIR when set.
func TestIndexRendersInHeadlessChromium(t *testing.T) {
	browser := findBrowser()
	if browser == "" {
		t.Skip("no Chromium found (chromium, chromium-browser, google-chrome or FLOWTEST_CHROMIUM): index.html was not rendered in a browser")
	}
	if runtime.GOOS == "windows" {
		t.Skip("the headless screenshot test runs on Linux and macOS")
	}
	outDir := os.Getenv("FLOWTEST_SCREENSHOT_DIR")
	if outDir == "" {
		outDir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(outDir, 0o755))
	// The page's colours (render's colFailed, colPassed, colProcess, colWait).
	passed, failed, process, wait := rgb("#2e7d32"), rgb("#c62828"), rgb("#455a64"), rgb("#00838f")
	for _, c := range []struct {
		name    string
		archive func(*testing.T, string) string
		want    map[string][3]uint8
	}{
		{"passing", passingArchive, map[string][3]uint8{"passed green": passed, "process grey": process, "wait teal": wait}},
		{"failing", indexArchive, map[string][3]uint8{"verdict/failed red": failed, "passed green": passed, "process grey": process, "wait teal": wait}},
	} {
		t.Run(c.name, func(t *testing.T) {
			shot := filepath.Join(outDir, "index-"+c.name+".png")
			img := screenshot(t, browser, filepath.Join(c.archive(t, t.TempDir()), IndexFile), shot)
			ink, found := inkAndColours(img, c.want)
			assert.Greater(t, ink, 0.03, "the page is (almost) blank")
			for name := range c.want {
				assert.Greater(t, found[name], 20, "no %s in the screenshot: the verdict or the timelines did not render", name)
			}
		})
	}
}

// screenshot renders page in a headless browser into shot (1200x2400) and decodes it.
func screenshot(t *testing.T, browser, page, shot string) image.Image {
	t.Helper()
	os.Remove(shot)
	profile := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser,
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--user-data-dir="+profile, "--hide-scrollbars",
		"--window-size=1200,2400", "--screenshot="+shot, "file://"+filepath.ToSlash(page))
	// An explicit environment: a scratch home, nothing of the caller's.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + profile, "TMPDIR=" + os.TempDir()}
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Run(), "chromium: %s", out.String())
	f, err := os.Open(shot)
	require.NoError(t, err, "no screenshot written: %s", out.String())
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	t.Logf("screenshot: %s (%dx%d)", shot, img.Bounds().Dx(), img.Bounds().Dy())
	return img
}

// inkAndColours samples every other pixel of img: the share that is not near white, and how
// many match each wanted colour.
func inkAndColours(img image.Image, colours map[string][3]uint8) (float64, map[string]int) {
	b := img.Bounds()
	total, ink := 0, 0
	found := map[string]int{}
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			total++
			r, g, bl := pixel(img, x, y)
			if r < 240 || g < 240 || bl < 240 {
				ink++
			}
			for name, c := range colours {
				if near(r, c[0]) && near(g, c[1]) && near(bl, c[2]) {
					found[name]++
				}
			}
		}
	}
	return float64(ink) / float64(total), found
}

func pixel(img image.Image, x, y int) (uint8, uint8, uint8) {
	r, g, b, _ := img.At(x, y).RGBA()
	return uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)
}

func near(a, b uint8) bool { return a >= b-6 && a <= b+6 || (b < 6 && a < 12) }

func rgb(hex string) [3]uint8 {
	var c [3]uint8
	for i := 0; i < 3; i++ {
		var v uint8
		for _, ch := range hex[1+2*i : 3+2*i] {
			v <<= 4
			switch {
			case ch >= '0' && ch <= '9':
				v |= uint8(ch - '0')
			default:
				v |= uint8(ch-'a') + 10
			}
		}
		c[i] = v
	}
	return c
}
