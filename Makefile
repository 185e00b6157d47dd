# flowtest — build, run and test. `make run` is the main job (all 43 scenarios on the
# sandbox); `make test` is the test suite (unit tests, runner self-tests and the acceptance
# scenarios on the sandbox).
GO      ?= go
BIN     := bin
EXE     := $(shell $(GO) env GOEXE)
FLAGS   ?=

.PHONY: build run test vet bench clean

build:
	$(GO) build -o $(BIN)/flowtest$(EXE) ./cmd/flowtest
	$(GO) build -o $(BIN)/flowsandbox$(EXE) ./cmd/flowsandbox

run: build
	./$(BIN)/flowtest$(EXE) run $(FLAGS)

test: build
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 40m ./...

vet:
	$(GO) vet ./...
	GOOS=windows $(GO) vet ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf $(BIN)
