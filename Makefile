# flowtest — build, run and test. `make run` is the main job (all 43 scenarios on the
# sandbox); `make test` is the test suite (unit tests, runner self-tests and the acceptance
# scenarios on the sandbox).
GO      ?= go
BIN     := bin
EXE     := $(shell $(GO) env GOEXE)
FLAGS   ?=

.PHONY: build run test vet bench defects clean

build:
	$(GO) build -o $(BIN)/flowtest$(EXE) ./cmd/flowtest
	$(GO) build -o $(BIN)/flowsandbox$(EXE) ./cmd/flowsandbox

run: build
	./$(BIN)/flowtest$(EXE) run $(FLAGS)

test: build
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 40m ./...

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
