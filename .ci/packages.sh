#!/usr/bin/env bash
# Debian packages, built and used as a user would: on a clean machine,
#  1. installs the tools it needs (debhelper, dpkg-dev, lintian, cmake, ...);
#  2. builds the source package and the binary packages libmgpukernels0 and
#     libmgpukernels-dev from debian/ with dpkg-buildpackage (debhelper's
#     Meson build system) in a copy of the tree, and runs lintian on them
#     (errors and warnings fail);
#  3. unpacks both into a scratch root (dpkg -x) and checks what they hold
#     (files, Depends on the driver library only, no CUDA runtime linked);
#  4. compiles the examples shipped in the -dev package against that root,
#     the GEMM one with pkg-config and all of them with CMake (find_package
#     CONFIG), and runs the binaries: without a GPU they must report NO_DRIVER or
#     NO_DEVICE and exit 77; with one they must exit 0;
#  5. pip-installs python/ into a virtual environment and loads the unpacked
#     library through it (MGPU_LIBRARY).
# Exits 0 when everything passed, 1 at the first failure (with its log).
#
# Environment:
#   MGPU_PKG_ARCHS  GPU architectures to compile (default sm90a, to keep CI
#                   short; a release build is MGPU_PKG_ARCHS=sm90a,sm100a).
#   MGPU_PKG_WORK   scratch folder (default: a new one under /tmp, removed on
#                   success unless MGPU_PKG_KEEP=1).
#   MGPU_PKG_REUSE  1: with MGPU_PKG_WORK holding packages of an earlier run,
#                   skip the build and check those (for working on this script).
#   CUDA_HOME       toolkit holding nvcc (default: nvcc on PATH, else /usr/local/cuda).
set -euo pipefail
cd "$(dirname "$0")/.."
src_root=$PWD
start=$(date +%s)
archs=${MGPU_PKG_ARCHS:-sm90a}

step() { printf '== packages: %s\n' "$*"; }
fail() {
    printf 'packages: FAILED: %s (scratch kept in %s)\n' "$*" "$work" >&2
    exit 1
}

# ---------------------------------------------------------------- 1. tools
need_apt=()
for tool in dpkg-buildpackage:dpkg-dev dh:debhelper lintian:lintian fakeroot:fakeroot cc:build-essential \
            cmake:cmake pkg-config:pkg-config ninja:ninja-build; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || need_apt+=("${tool#*:}")
done
[ -x /usr/bin/meson ] || need_apt+=(meson)
if [ ${#need_apt[@]} -gt 0 ]; then
    step "installing ${need_apt[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
cuda_home=${CUDA_HOME:-}
if [ -z "$cuda_home" ]; then
    if command -v nvcc >/dev/null 2>&1; then
        cuda_home=$(dirname "$(dirname "$(command -v nvcc)")")
    else
        cuda_home=/usr/local/cuda
    fi
fi
[ -x "$cuda_home/bin/nvcc" ] || { echo "packages: FAILED: no nvcc in $cuda_home/bin (set CUDA_HOME)" >&2; exit 1; }

work=${MGPU_PKG_WORK:-$(mktemp -d /tmp/mgpu-packages.XXXXXX)}
mkdir -p "$work"
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

# ---------------------------------------------------------------- 2. build
if [ "${MGPU_PKG_REUSE:-0}" = 1 ] && ls "$work"/libmgpukernels0_"$version"_*.deb >/dev/null 2>&1; then
    step "reusing the packages in $work (MGPU_PKG_REUSE=1)"
else
step "copying the source tree to $work/libmgpukernels-$version"
tree=$work/libmgpukernels-$version
rm -rf "$tree" && mkdir -p "$tree"
if git -C "$src_root" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$src_root" ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' f; do if [ -e "$f" ]; then printf '%s\0' "$f"; fi; done |
        tar -c --null -T - -f - | tar -x -C "$tree"
else
    tar -c --exclude='./build*' --exclude='./.git' -f - . | tar -x -C "$tree"
fi

step "source package (dpkg-buildpackage -S; log in $work/source.log)"
(cd "$tree" && PATH="/usr/sbin:/usr/bin:/sbin:/bin:$PATH" dpkg-buildpackage -S -us -uc -d) >"$work/source.log" 2>&1 ||
    { tail -n 30 "$work/source.log" >&2; fail "dpkg-buildpackage -S"; }

step "dpkg-buildpackage (archs $archs; log in $work/build.log)"
# Debian's own tools first on PATH (meson, python3), the toolkit last.
if ! (cd "$tree" &&
      PATH="/usr/sbin:/usr/bin:/sbin:/bin:$PATH:$cuda_home/bin" \
      DEB_BUILD_OPTIONS="mgpu-archs=$archs parallel=$(nproc)" \
      MGPU_CUDA_TOOLKIT="$cuda_home" \
      dpkg-buildpackage -b -us -uc --build-profiles=pkg.libmgpukernels.local-cuda) >"$work/build.log" 2>&1; then
    tail -n 60 "$work/build.log" >&2
    fail "dpkg-buildpackage"
fi
fi
lib_deb=$(ls "$work"/libmgpukernels0_"$version"_*.deb)
dev_deb=$(ls "$work"/libmgpukernels-dev_"$version"_*.deb)
step "built $(basename "$lib_deb") $(basename "$dev_deb")"

step "lintian"
# The .changes files name the binary packages and the source package.
lintian --fail-on error,warning --display-info "$work"/libmgpukernels_"$version"_*.changes |
    tee "$work/lintian.log" || fail "lintian"

# ---------------------------------------------------------------- 3. contents
root=$work/root
rm -rf "$root" && mkdir -p "$root"
dpkg -x "$lib_deb" "$root"
dpkg -x "$dev_deb" "$root"
libdir=$root/usr/lib/$multiarch
examples=$root/usr/share/doc/libmgpukernels-dev/examples
step "checking the unpacked files in $root"
for f in "$libdir/libmgpukernels.so.0" "$libdir/libmgpukernels.so" "$root/usr/include/mgpukernels.h" \
         "$libdir/pkgconfig/mgpukernels.pc" "$libdir/cmake/mgpukernels/mgpukernelsConfig.cmake" \
         "$libdir/cmake/mgpukernels/mgpukernelsConfigVersion.cmake" "$examples/gemm.c"; do
    [ -e "$f" ] || fail "missing ${f#"$root"}"
done
depends=$(dpkg-deb -f "$lib_deb" Depends)
echo "libmgpukernels0 Depends: $depends"
case "$depends" in *libcuda1*) ;; *) fail "libmgpukernels0 does not depend on the driver library (libcuda1)" ;; esac
case "$depends" in *cudart*|*cublas*|*nvidia-cuda-toolkit*) fail "libmgpukernels0 depends on CUDA toolkit libraries" ;; esac
needed=$(readelf -d "$libdir/libmgpukernels.so.0" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
echo "libmgpukernels.so.0 NEEDED: $needed"
case "$needed" in *libcuda*|*libcudart*) fail "the library links a CUDA library" ;; esac

# ---------------------------------------------------------------- 4. use
# The example programs use the CUDA runtime for memory; the library does not.
cuda_flags=(-I"$cuda_home/include" -L"$cuda_home/lib64" -lcudart)
run_example() { # binary, how it was built
    local out rc=0
    out=$(LD_LIBRARY_PATH="$libdir:$cuda_home/lib64" "$1" 2>&1) || rc=$?
    echo "$2: exit $rc: $out"
    if [ $rc -eq 77 ]; then
        case "$out" in *MGPU_STATUS_NO_DRIVER*|*MGPU_STATUS_NO_DEVICE*) ;; *) fail "$2: exit 77 without NO_DRIVER/NO_DEVICE" ;; esac
    elif [ $rc -ne 0 ]; then
        fail "$2: exit $rc"
    fi
    local deps
    deps=$(LD_LIBRARY_PATH="$libdir:$cuda_home/lib64" ldd "$1")
    case "$deps" in
        *"libmgpukernels.so.0 => $libdir/"*) ;;
        *) fail "$2 did not load libmgpukernels.so.0 from the unpacked packages" ;;
    esac
}

step "compiling examples/gemm.c with pkg-config"
pc=(env PKG_CONFIG_SYSROOT_DIR="$root" PKG_CONFIG_LIBDIR="$libdir/pkgconfig" pkg-config)
echo "pkg-config --cflags --libs mgpukernels: $("${pc[@]}" --cflags --libs mgpukernels)"
[ "$("${pc[@]}" --modversion mgpukernels)" = "${version%%-*}" ] || fail "pkg-config --modversion"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -o "$work/gemm-pkgconfig" "$examples/gemm.c" \
    $("${pc[@]}" --cflags --libs mgpukernels) "${cuda_flags[@]}" || fail "cc with pkg-config"
run_example "$work/gemm-pkgconfig" "gemm (pkg-config)"

step "compiling every example with CMake (find_package(mgpukernels CONFIG))"
rm -rf "$work/cmake-build" "$work/cmake-v1"
if ! cmake -S "$examples" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$root/usr" \
        -DCUDAToolkit_ROOT="$cuda_home" -DCMAKE_C_FLAGS="-Wall -Wextra -Werror" >"$work/cmake.log" 2>&1 ||
   ! cmake --build "$work/cmake-build" >>"$work/cmake.log" 2>&1; then
    cat "$work/cmake.log" >&2
    fail "cmake"
fi
found=$(sed -n 's/^mgpukernels_DIR:PATH=//p' "$work/cmake-build/CMakeCache.txt")
echo "mgpukernels_DIR=$found"
[ "$found" = "$libdir/cmake/mgpukernels" ] || fail "CMake found mgpukernels outside the unpacked root"
for ex in gemm embedding stream_graph transformer_block; do
    run_example "$work/cmake-build/$ex" "$ex (CMake)"
done

step "CMake version file: a request for version 1 must be refused"
mkdir -p "$work/cmake-v1"
printf 'cmake_minimum_required(VERSION 3.18)\nproject(v LANGUAGES NONE)\nfind_package(mgpukernels 1 CONFIG REQUIRED)\n' \
    >"$work/cmake-v1/CMakeLists.txt"
if cmake -S "$work/cmake-v1" -B "$work/cmake-v1/build" -DCMAKE_PREFIX_PATH="$root/usr" >/dev/null 2>&1; then
    fail "find_package(mgpukernels 1) accepted version $version"
fi

step "pip install ./python, loading the unpacked library"
python3 -m venv "$work/venv" >/dev/null || fail "python3 -m venv"
"$work/venv/bin/pip" install -q "$src_root/python" >"$work/pip.log" 2>&1 || { cat "$work/pip.log" >&2; fail "pip install ./python"; }
(cd "$work" && MGPU_LIBRARY="$libdir/libmgpukernels.so.0" "$work/venv/bin/python" - "${version%%-*}" <<'PY') || fail "python package"
import sys
import mgpukernels as mk
assert mk.library_version() == sys.argv[1], mk.library_version()
try:
    mk.Handle().close()
    print("mgpukernels", mk.library_version(), "from", mk.__file__, ": a GPU is present")
except mk.DeviceUnavailableError as e:
    print("mgpukernels", mk.library_version(), "from", mk.__file__, ":", type(e).__name__, e)
PY

step "passed in $(( $(date +%s) - start )) s"
if [ -z "${MGPU_PKG_WORK:-}" ] && [ "${MGPU_PKG_KEEP:-0}" != 1 ]; then
    rm -rf "$work"
fi
