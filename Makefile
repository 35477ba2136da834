# gpipe — build, run, test.
#   make run     build gpipe and run PageRank on the bundled example graph
#   make test    the whole test suite (no GPU needed; GPU tests skip)
#   make lint    gofmt + go vet + staticcheck (what reviewers check)
#   make check   make lint + make test
#   make kernels regenerate kernels/*.fatbin (and .stamp) from kernels/*.cu (needs nvcc)
#   make gpu-bundle  build gpipe and the GPU test binaries for a GPU machine

GO        ?= go
BIN       := bin/gpipe
EXAMPLE   := examples/data/karate.parquet
export CGO_ENABLED ?= 0
# The version gpipe --version prints: git describe of the tree built (a
# tag, else the commit; "-dirty" where it has changes), stamped into
# main.version. Override it with make VERSION=v1.2.0.
VERSION   ?= $(shell ./scripts/version.sh)
LDFLAGS   := -X main.version=$(VERSION)

.PHONY: all build run test check lint staticcheck fmt vet kernels gpu-bundle bench fuzz clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/gpipe

run: build
	$(BIN) run --input $(EXAMPLE) --op pagerank --undirected
	$(BIN) run --input $(EXAMPLE) --op bfs --source 1 --undirected --output bin/karate-bfs.csv
	@echo "BFS from vertex 1 written to bin/karate-bfs.csv:"
	@head -5 bin/karate-bfs.csv

# examples/library is a module of its own (a program outside gpipe's module
# that imports it through a replace): go test ./... does not reach it.
test:
	$(GO) test -count=1 -timeout 15m ./... && $(GO) test -count=1 -run xxx -bench . -benchtime 1x ./operators/
	cd examples/library && $(GO) test -count=1 ./...

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	cd examples/library && $(GO) vet ./...
	$(GO) vet -tags gpipe_nokernels ./kernels  # the GPU bundle's test binaries' build

# staticcheck at a pinned version, through go run: nothing to install
# (the module proxy serves it; the first run builds it, about a minute on
# two cores). staticcheck.conf says which checks are off and why.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
staticcheck:
	$(GO) run $(STATICCHECK) ./...
	cd examples/library && $(GO) run $(STATICCHECK) ./...

lint: fmt vet staticcheck

check: lint test

# Compiling kernels needs the CUDA toolkit (nvcc); the GPU machine has it.
kernels:
	./kernels/build.sh

# Everything a GPU machine without Go needs, in .gpu-bundle/: gpipe, the test
# binaries of the GPU-using packages and run.sh (see docs/gpu.md).
gpu-bundle:
	VERSION=$(VERSION) ./scripts/gpu-bundle.sh

fuzz:
	$(GO) test ./ingest/text -run XXX -fuzz FuzzText -fuzztime 30s
	$(GO) test ./ingest/text -run XXX -fuzz FuzzMatrixMarket -fuzztime 30s
	$(GO) test ./ingest/csv -run XXX -fuzz FuzzCSV -fuzztime 30s

clean:
	rm -rf bin .gpu-bundle .gpu-bundle.tar.xz
