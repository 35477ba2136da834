#!/usr/bin/env bash
# Counts, per kernel (.entry), the global loads in the PTX nvcc makes of
# kernels/*.cu: "module entry nc all", nc the ld.global.nc (the read-only
# data path: common.cuh's ReadOnly, __ldg, const __restrict__ parameters)
# and all every ld.global, nc included. A kernel whose read-only arrays
# leave the nc path loses bandwidth and says nothing (issue 35: NVVM ignores
# __restrict__ on struct members and on locals copied from them).
#
#   scripts/ptx-loads.sh [SRC]        SRC: a commit (its kernels/, by git
#                                     archive) or a directory of .cu files;
#                                     none: this tree's kernels/
#   scripts/ptx-loads.sh X.ptx ...    PTX files, counted as they are
#   scripts/ptx-loads.sh -c OLD [NEW] both, side by side: "module entry
#                                     old_nc old_all new_nc new_all", with
#                                     "LESS-NC" where new_nc < old_nc and "-"
#                                     for a kernel one side lacks
#
# NVCC (default nvcc) compiles for compute_80 at -O3, as kernels/build.sh
# does. Static counts: a loop the compiler unrolls or duplicates counts its
# loads once a copy, so compare a kernel with itself across commits.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
NVCC=${NVCC:-nvcc}

count() { # one .ptx: module entry nc all
	awk -v mod="$(basename "$1" .ptx)" '
		function out() { if (e != "") print mod, e, nc + 0, all + 0 }
		/\.entry[ \t]/ { out(); e = $0; sub(/.*\.entry[ \t]+/, "", e); sub(/\(.*/, "", e); nc = 0; all = 0; next }
		/^[ \t]*(@!?%p[0-9]+[ \t]+)?ld\.global/ { all++; if ($0 ~ /ld\.global\.nc/) nc++ }
		END { out() }' "$1"
}

compile() { # SRC: a commit or a directory
	local src=${1:-$root/kernels} tmp
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' RETURN
	if [[ ! -d $src ]]; then
		git -C "$root" archive "$src" kernels | tar -x -C "$tmp"
		src=$tmp/kernels
	fi
	command -v "$NVCC" >/dev/null || { echo "scripts/ptx-loads.sh: $NVCC not found (set NVCC)" >&2; return 1; }
	for cu in "$src"/*.cu; do
		"$NVCC" -ptx -arch=compute_80 -O3 -std=c++17 -o "$tmp/$(basename "$cu" .cu).ptx" "$cu"
		count "$tmp/$(basename "$cu" .cu).ptx"
	done
}

if [[ ${1:-} == -c ]]; then
	[[ $# -ge 2 ]] || { echo "usage: scripts/ptx-loads.sh -c OLD [NEW]" >&2; exit 2; }
	old=$(compile "$2")
	new=$(compile "${3:-}")
	awk 'NR == FNR { o[$1 " " $2] = $3 " " $4; next }
		{ k = $1 " " $2; was = k in o ? o[k] : "- -"; split(was, w, " ")
		  print k, was, $3, $4, (k in o && $3 + 0 < w[1] + 0 ? "LESS-NC" : ""); seen[k] = 1 }
		END { for (k in o) if (!(k in seen)) print k, o[k], "- -" }' <(echo "$old") <(echo "$new")
elif [[ $# -gt 0 && $1 == *.ptx ]]; then
	for p in "$@"; do count "$p"; done
else
	compile "${1:-}"
fi
