#!/usr/bin/env bash
# Instruction counts of every kernel entry in the given cubins, from the SASS
# that cuobjdump disassembles: one tab-separated line per entry with its
# registers, stack and local bytes (cuobjdump -res-usage), its total
# instruction count and the counts of the instructions that say most about a
# kernel's shape (HGMMA / QGMMA: wgmma; UTMALDG / UTMASTG: TMA; LDL / STL:
# local-memory traffic, i.e. spills). Two runs over builds of two commits,
# compared with diff, show whether a change altered the kernels; the LDL/STL
# and LOCAL columns are the spill check.
#
#   bench/sass_counts.sh build/*.cubin > counts.tsv
#   bench/sass_counts.sh --sass DIR build/*.cubin   # also DIR/<cubin>.sass:
#       the SASS with instruction addresses and encodings removed, for diff
#
# Needs only cuobjdump (and the nvdisasm it runs), no GPU: $CUOBJDUMP, else
# cuobjdump on PATH, else the CUDA toolkit's.
set -euo pipefail

sass_dir=""
if [[ "${1:-}" == "--sass" ]]; then
    sass_dir="$2"
    shift 2
    mkdir -p "$sass_dir"
fi
if [[ $# -eq 0 ]]; then
    echo "usage: $0 [--sass DIR] CUBIN..." >&2
    exit 2
fi

cuobjdump="${CUOBJDUMP:-$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)}"

printf 'cubin\tentry\treg\tstack\tlocal\ttotal\tHGMMA\tQGMMA\tUTMALDG\tUTMASTG\tLDL\tSTL\n'
for cubin in "$@"; do
    base="$(basename "$cubin" .cubin)"
    sass="$("$cuobjdump" -sass "$cubin")"
    if [[ -n "$sass_dir" ]]; then
        # Drop "/*0a10*/" address prefixes and "/* 0x... */" encodings.
        sed -E -e 's@/\*[0-9a-f]{4,}\*/@@' -e 's@/\* 0x[0-9a-f]+ \*/@@' -e 's/[[:space:]]+$//' -e '/^$/d' \
            <<<"$sass" >"$sass_dir/$base.sass"
    fi
    { "$cuobjdump" -res-usage "$cubin"; echo "@@SASS@@"; echo "$sass"; } | awk -v cubin="$base" '
        /^@@SASS@@$/ { in_sass = 1; next }
        !in_sass && /^ *Function [^ ]+:$/ {
            name = $2; sub(/:$/, "", name); next
        }
        !in_sass && /REG:/ && name != "" {
            for (i = 1; i <= NF; ++i) {
                split($i, kv, ":")
                if (kv[1] == "REG") reg[name] = kv[2]
                if (kv[1] == "STACK") stack[name] = kv[2]
                if (kv[1] == "LOCAL") local_[name] = kv[2]
            }
            name = ""; next
        }
        in_sass && /Function : / { fn = $3; fns[fn] = 1; next }
        in_sass && fn != "" && /^[[:space:]]+\/\*[0-9a-f]+\*\// {
            op = $2
            if (op ~ /^@/) op = $3
            split(op, parts, ".")
            total[fn]++
            count[fn, parts[1]]++
        }
        END {
            n = 0
            for (f in fns) list[++n] = f
            # insertion sort: stable entry order across runs
            for (i = 2; i <= n; ++i) {
                v = list[i]; j = i - 1
                while (j > 0 && list[j] > v) { list[j + 1] = list[j]; --j }
                list[j + 1] = v
            }
            for (i = 1; i <= n; ++i) {
                f = list[i]
                printf "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", cubin, f, reg[f], stack[f], local_[f],
                       total[f], count[f, "HGMMA"], count[f, "QGMMA"], count[f, "UTMALDG"], count[f, "UTMASTG"],
                       count[f, "LDL"], count[f, "STL"]
            }
        }'
done
