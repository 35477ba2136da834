#!/usr/bin/env bash
# Prints the version a build of gpipe is stamped with (-ldflags -X
# main.version, by the Makefile and scripts/gpu-bundle.sh): git describe of
# the working tree, a tag where one is reachable (v1.2.0, v1.2.0-3-gabc1234)
# else the commit, with "-dirty" where the tree has changes; "dev" outside a
# repository.
cd "$(dirname "$0")/.." || exit 1
git describe --tags --always --dirty 2>/dev/null || echo dev
