# Sourced by the SASS tests (tests/sass_*.sh): finds the cubin and cuobjdump,
# disassembles once. After `sass_load CUBIN WHAT ARCH`, $sass holds
# `cuobjdump -sass` and $res `cuobjdump -res-usage` of CUBIN. Exits 77
# (skipped) when the cubin was not built (ARCH not in -Darchs) or no cuobjdump
# is found ($CUOBJDUMP, PATH, the CUDA toolkit's bin); 1 when cuobjdump fails.
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
