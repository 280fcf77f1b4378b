# Sourced by the SASS tests (tests/sass_*.sh): finds the cubin and cuobjdump,
# disassembles once, and holds the parts every test repeats.
#   sass_load CUBIN WHAT ARCH   $sass := `cuobjdump -sass` and $res :=
#                               `cuobjdump -res-usage` of CUBIN. Exits 77
#                               (skipped) when the cubin was not built (ARCH
#                               not in -Darchs) or no cuobjdump is found
#                               ($CUOBJDUMP, PATH, the CUDA toolkit's bin); 1
#                               when cuobjdump fails.
#   sass_entries VAR ERE [N WHAT]
#                               VAR := the entries of $sass whose names match
#                               ERE, sorted; exits 1 when there is none or,
#                               with N, when there are not N (WHAT: which).
#   sass_body ENTRY             $body := ENTRY's SASS; then `count ERE` counts
#                               its lines matching ERE, and $ldl, $stl (LDL /
#                               STL) and $local_bytes are ENTRY's.
#   sass_res_field ENTRY FIELD  ENTRY's FIELD (REG, LOCAL, ...) in $res.
#   sass_local_bytes ENTRY      ENTRY's LOCAL bytes in $res.
#   sass_verdict ENTRY          with the entry's failed rules in the array
#                               `bad`, adds the local-memory rules (no LDL /
#                               STL: $ldl, $stl; LOCAL $local_bytes 0), prints
#                               the failures and sets fail=1 when any.
# A test prints one line of counts per entry: `printf "$fmt"` of the header,
# then of each entry's counts.
fail=0

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

sass_entries() {
    local var=$1 re=$2 want=${3:-} what=${4:-} found n
    found=$(grep -oE "Function : $re" <<<"$sass" | awk '{print $3}' | sort -u)
    if [[ -z "$found" ]]; then
        echo "no $re entry in ${cubin:-the cubin}"
        exit 1
    fi
    n=$(wc -w <<<"$found")
    if [[ -n "$want" ]] && (( n != want )); then
        echo "expected $want entries ($what), found $n:" $found
        exit 1
    fi
    printf -v "$var" '%s' "$found"
}

count() { grep -cE "$1" <<<"$body" || true; }

sass_body() {
    body=$(awk -v f="$1" '/Function : /{p=($3==f)} p' <<<"$sass")
    ldl=$(count '[[:space:]]LDL')
    stl=$(count '[[:space:]]STL')
    local_bytes=$(sass_local_bytes "$1")
}

sass_res_field() {
    awk -v f="$1" -v k="$2" '$0 ~ "Function " f ":" {getline; if (match($0, k ":[0-9]+")) print substr($0, RSTART + length(k) + 1, RLENGTH - length(k) - 1)}' <<<"$res"
}

sass_local_bytes() { sass_res_field "$1" LOCAL; }

sass_verdict() {
    (( ldl == 0 && stl == 0 )) || bad+=("local memory traffic (LDL $ldl, STL $stl): register spills")
    [[ "${local_bytes:-}" == 0 ]] || bad+=("LOCAL ${local_bytes:-unknown} bytes")
    if (( ${#bad[@]} )); then
        fail=1
        printf '  FAIL %s: %s\n' "$1" "$(IFS=';'; echo "${bad[*]}")"
    fi
}
