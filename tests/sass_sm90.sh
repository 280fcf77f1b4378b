#!/usr/bin/env bash
# Build-time check of sm_90a cubins, no GPU needed: every entry must be free of
# local memory, i.e. no register spills:
#   LDL / STL     none in the SASS that cuobjdump disassembles
#   LOCAL         0 bytes in cuobjdump -res-usage
# and the tensor-core entries (the GEMMs mgpu_gemm_sm90_*, the attention
# kernels mgpu_attention_{fwd,bwd,fwd_decode}_sm90_<dtype>_d<head_dim>) must use the
# tensor cores (HGMMA; QGMMA for fp8) and TMA loads (UTMALDG); the other
# entries of a cubin (the attention combine, KV append, backward pre / post
# passes) are checked for local memory only. The GEMM main loops issue wgmma
# in batches of 4 or more behind one WARPGROUP.ARRIVE, so a GEMM entry with as
# many ARRIVEs as HGMMA / QGMMA was serialized by ptxas (its info message
# C7514, which does not fail the build: each wgmma waits for the previous
# one). Prints one line of counts per
# entry.
#
#   tests/sass_sm90.sh build/gemm_sm90_ws.cubin
#   tests/sass_sm90.sh build/attention_fwd_sm90.cubin build/attention_bwd_sm90.cubin
#
# Exit 77 (skipped) when no cubin was given or built (no sm90a in -Darchs) or
# no cuobjdump is found ($CUOBJDUMP, PATH, the CUDA toolkit's bin).
set -uo pipefail

source "$(dirname "$0")/sass_common.sh"
(( $# )) || sass_load "" "sm90a" sm90a

n=0
fmt='%-52s %6s %6s %8s %5s %5s %6s %5s\n'
printf "$fmt" entry xGMMA ARRIVE UTMALDG LDL STL LOCAL REG
for cubin in "$@"; do
    sass_load "$cubin" "sm90a" sm90a
    # One pass over the SASS: per entry, the counts (name xGMMA UTMALDG LDL STL ARRIVE).
    counts=$(awk '
        /Function : / { f = $3; order[++n] = f; mma[f] = ldg[f] = ldl[f] = stl[f] = arr[f] = 0; next }
        f == "" { next }
        /[[:space:]][HQ]GMMA/ { mma[f]++ }
        /[[:space:]]WARPGROUP\.ARRIVE/ { arr[f]++ }
        /[[:space:]]UTMALDG/ { ldg[f]++ }
        /[[:space:]]LDL/ { ldl[f]++ }
        /[[:space:]]STL/ { stl[f]++ }
        END { for (i = 1; i <= n; i++) { g = order[i]; print g, mma[g], ldg[g], ldl[g], stl[g], arr[g] } }' <<<"$sass")
    if [[ -z "$counts" ]]; then
        echo "no entry in $cubin"
        exit 1
    fi
    while read -r e mma ldg ldl stl arr; do
        n=$((n + 1))
        local_bytes=$(sass_local_bytes "$e")
        regs=$(sass_res_field "$e" REG)
        printf "$fmt" "$e" "$mma" "$arr" "$ldg" "$ldl" "$stl" "${local_bytes:-?}" "${regs:-?}"
        bad=()
        if [[ "$e" =~ ^mgpu_gemm_sm90_ || "$e" =~ ^mgpu_attention_(fwd|bwd|fwd_decode)_sm90_[a-z0-9]+_d[0-9]+$ ]]; then
            (( mma >= 1 )) || bad+=("no HGMMA / QGMMA")
            (( ldg >= 1 )) || bad+=("no UTMALDG")
        fi
        if [[ "$e" =~ ^mgpu_gemm_sm90_ ]]; then
            (( arr < mma )) || bad+=("wgmma serialized ($arr WARPGROUP.ARRIVE for $mma HGMMA / QGMMA: ptxas C7514)")
        fi
        sass_verdict "$e"
    done <<<"$counts"
done
echo "$n entries checked"
exit $fail
