# Sourced by the SASS tests (tests/sass_*.sh): finds the cubin and cuobjdump,
# disassembles once. After `sass_load CUBIN WHAT ARCH`, $sass holds
# `cuobjdump -sass` and $res `cuobjdump -res-usage` of CUBIN. Exits 77
# (skipped) when the cubin was not built (ARCH not in -Darchs) or no cuobjdump
# is found ($CUOBJDUMP, PATH, the CUDA toolkit's bin); 1 when cuobjdump fails.
# sass_local_bytes ENTRY prints the entry's LOCAL bytes from $res;
# sass_verdict ENTRY, with the entry's failed rules in the array `bad`, prints
# them and sets fail=1.
sass_load() {
    local cubin=$1 what=$2 arch=$3
    if [[ -z "$cubin" || ! -f "$cubin" ]]; then
        echo "$what cubin not built (-Darchs without $arch): skipped"
        exit 77
    fi
    cuobjdump="${CUOBJDUMP:-$(command -v cuobjdump || true)}"
    [[ -z "$cuobjdump" && -x /usr/local/cuda/bin/cuobjdump ]] && cuobjdump=/usr/local/cuda/bin/cuobjdump
    if [[ -z "$cuobjdump" ]]; then
        echo "no cuobjdump (set CUOBJDUMP): skipped"
        exit 77
    fi
    sass="$("$cuobjdump" -sass "$cubin")" || { echo "cuobjdump -sass failed (nvdisasm on PATH?)"; exit 1; }
    res="$("$cuobjdump" -res-usage "$cubin")" || { echo "cuobjdump -res-usage failed"; exit 1; }
}

sass_local_bytes() {
    awk -v f="$1" '$0 ~ "Function " f ":" {getline; if (match($0, /LOCAL:[0-9]+/)) print substr($0, RSTART + 6, RLENGTH - 6)}' <<<"$res"
}

sass_verdict() {
    if (( ${#bad[@]} )); then
        fail=1
        printf '  FAIL %s: %s\n' "$1" "$(IFS=';'; echo "${bad[*]}")"
    fi
}
