# flowtest — build, run and test. `make run` is the main job (all 43 scenarios on the
# sandbox); `make test` is the test suite (unit tests, runner self-tests and the acceptance
# scenarios on the sandbox).
GO      ?= go
BIN     := bin
EXE     := $(shell $(GO) env GOEXE)
FLAGS   ?=

.PHONY: build run test flake vet bench defects clean cli-kintone

build:
	$(GO) build -o $(BIN)/flowtest$(EXE) ./cmd/flowtest
	$(GO) build -o $(BIN)/flowsandbox$(EXE) ./cmd/flowsandbox

run: build cli-kintone
	./$(BIN)/flowtest$(EXE) run $(FLAGS)

# The real cli-kintone for csv2-03 (@kintone/cli, pinned by tools/cli-kintone/package-lock.json)
# installed with npm ci into tools/cli-kintone/node_modules when Node.js and npm are present;
# without them csv2-03 is blocked ("cli-kintone unavailable"), never passed.
cli-kintone:
	@if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then \
	  test -x tools/cli-kintone/node_modules/.bin/cli-kintone || npm ci --prefix tools/cli-kintone --ignore-scripts --no-audit --no-fund; \
	else echo "cli-kintone: Node.js/npm not found, csv2-03-clikintone will be blocked"; fi

# The acceptance scenarios in `go test` run at the sandbox's default concurrency (three per
# core, at most 8: an emulator per scenario), so the suite takes minutes, not its serial sum.
test: build cli-kintone
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 40m ./...

# Flake hunting: the selection N times at the default concurrency; exit 1 if a scenario flaked.
flake: build
	./$(BIN)/flowtest$(EXE) run --repeat $(or $(N),5) $(FLAGS)

# Every planted defect (sandbox/defect/defects.yaml) built into a broken sandbox and shown to
# be caught by its scenarios; exit 1 if one escapes. `go test` runs the fast subset.
defects: build
	./$(BIN)/flowtest$(EXE) defects --go $(GO) $(FLAGS)

vet:
	$(GO) vet ./...
	GOOS=windows $(GO) vet ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf $(BIN)
