#!/usr/bin/env bash
# Build-time check of the sm_90a fp8 attention forward cubin, no GPU needed:
# for every entry mgpu_attention_fwd_fp8_sm90_* and mgpu_attention_fwd_fp8_vt_sm90_*
# (V^T from the workspace), in the SASS that cuobjdump disassembles:
#   QGMMA.64x128x32 ... E4M3.E4M3   the e4m3 wgmma of S = Q K^T and O += P V:
#                                   at least 16 (4 k-steps of each, in the
#                                   first, steady and last key blocks)
#   no HGMMA                        no 16-bit product left
#   UTMALDG                         TMA loads of Q, K, V (shared producer)
#   PRMT                            the V transpose's byte permutes (>= 32;
#                                   not in the _vt_ entries, which load V^T)
#   LDL / STL                       none, and cuobjdump -res-usage LOCAL:0
# Prints one line of counts per entry.
#
#   tests/sass_sm90_attention_fp8.sh build/attention_fwd_fp8_sm90.cubin
#
# Exit 77 (skipped) when the cubin was not built (no sm90a in -Darchs) or no
# cuobjdump is found ($CUOBJDUMP, PATH, the CUDA toolkit's bin).
set -uo pipefail

source "$(dirname "$0")/sass_common.sh"
cubin="${1:-}"
sass_load "$cubin" "sm90a fp8 attention" sm90a
counts=$(awk '
    /Function : / { f = $3; if (f ~ /^mgpu_attention_fwd_fp8_(vt_)?sm90_/) { order[++n] = f; q[f] = h[f] = ldg[f] = prmt[f] = ldl[f] = stl[f] = 0 } else f = ""; next }
    f == "" { next }
    /[[:space:]]QGMMA\.64x128x32\.F32\.E4M3\.E4M3/ { q[f]++ }
    /[[:space:]]HGMMA/ { h[f]++ }
    /[[:space:]]UTMALDG/ { ldg[f]++ }
    /[[:space:]]PRMT/ { prmt[f]++ }
    /[[:space:]]LDL/ { ldl[f]++ }
    /[[:space:]]STL/ { stl[f]++ }
    END { for (i = 1; i <= n; i++) { g = order[i]; print g, q[g], h[g], ldg[g], prmt[g], ldl[g], stl[g] } }' <<<"$sass")
if [[ -z "$counts" ]]; then
    echo "no mgpu_attention_fwd_fp8_sm90_* entry in $cubin"
    exit 1
fi
n=0
fmt='%-48s %6s %6s %8s %5s %5s %5s %6s\n'
printf "$fmt" entry QGMMA HGMMA UTMALDG PRMT LDL STL LOCAL
while read -r e qg hg ldg prmt ldl stl; do
    n=$((n + 1))
    local_bytes=$(sass_local_bytes "$e")
    printf "$fmt" "$e" "$qg" "$hg" "$ldg" "$prmt" "$ldl" "$stl" "${local_bytes:-?}"
    bad=()
    (( qg >= 16 )) || bad+=("QGMMA e4m3 count $qg < 16")
    (( hg == 0 )) || bad+=("HGMMA present")
    (( ldg >= 1 )) || bad+=("no UTMALDG")
    [[ $e == *_vt_* ]] || (( prmt >= 32 )) || bad+=("PRMT count $prmt < 32: no V transpose?")
    sass_verdict "$e"
done <<<"$counts"
echo "$n entries checked"
exit $fail
