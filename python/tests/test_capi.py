"""CPU tests of the bindings: the ctypes structures against the C header, library loading and
status -> exception mapping, array description (CUDA array interface, DLPack), and the mapping of
row-major / transposed / batched GEMM operands onto the column-major C API (checked by running the
mapped problem through a plain column-major GEMM written here, on host memory)."""
import ctypes
import pathlib
import shutil
import subprocess

import pytest

import mgpukernels as mk
from mgpukernels import _arrays, _capi, errors, ops

REPO = pathlib.Path(__file__).resolve().parents[2]
HEADER = REPO / "include" / "mgpukernels.h"

STRUCTS = {"mgpu_gemm_desc": _capi.GemmDesc, "mgpu_gather_desc": _capi.GatherDesc,
           "mgpu_scatter_add_desc": _capi.ScatterAddDesc, "mgpu_attention_fwd_desc": _capi.AttentionFwdDesc,
           "mgpu_attention_strides": _capi.AttentionStrides, "mgpu_kv_cache_append_desc": _capi.KvCacheAppendDesc}


def _header_has(name):
    return name in HEADER.read_text()


@pytest.mark.skipif(not HEADER.exists() or shutil.which("cc") is None, reason="needs the header and a C compiler")
def test_structures_match_the_header(tmp_path):
    structs = dict(STRUCTS)
    if _header_has("mgpu_attention_bwd_desc"):
        structs["mgpu_attention_bwd_desc"] = _capi.AttentionBwdDesc
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "mgpukernels.h"', "int main(void) {"]
    for cname, cls in structs.items():
        lines.append(f'printf("{cname} size %zu\\n", sizeof({cname}));')
        for field, _ in cls._fields_:
            lines.append(f'printf("{cname} {field} %zu\\n", offsetof({cname}, {field}));')
    lines += ["return 0;", "}"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines))
    exe = tmp_path / "layout"
    subprocess.run(["cc", "-std=c11", "-I", str(HEADER.parent), str(src), "-o", str(exe)], check=True)
    c_layout = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n")
    py_layout = []
    for cname, cls in structs.items():
        py_layout.append(f"{cname} size {ctypes.sizeof(cls)}")
        py_layout += [f"{cname} {field} {getattr(cls, field).offset}" for field, _ in cls._fields_]
    assert [l for l in c_layout if l] == py_layout


def test_library_loads():
    lib = mk.library()
    assert lib.version // 10000 == _capi.ABI_MAJOR
    assert mk.library_version().count(".") == 2
    assert lib.mgpu_status_string(16).decode() == "MGPU_STATUS_INDEX_OUT_OF_RANGE"


def test_missing_library_is_reported(monkeypatch):
    monkeypatch.setattr(_capi, "_library", None)
    monkeypatch.setenv("MGPU_LIBRARY", "/nonexistent/libmgpukernels.so")
    with pytest.raises(mk.LibraryNotFoundError, match="MGPU_LIBRARY"):
        mk.library()


def test_every_status_has_its_exception():
    lib = mk.library()
    for status, cls in errors.STATUS_EXCEPTIONS.items():
        name = lib.mgpu_status_string(status).decode()
        if name.endswith("UNKNOWN") or not name.startswith("MGPU_STATUS_"):
            continue  # a status this library does not know yet
        e = errors.exception_for(status, name, "what was wrong", "mgpu_x")
        assert isinstance(e, cls) and isinstance(e, mk.MgpuError)
        assert e.status == status and e.message == "what was wrong" and name in str(e)
    assert isinstance(errors.exception_for(5, "MGPU_STATUS_INVALID_VALUE", ""), ValueError)
    assert isinstance(errors.exception_for(16, "MGPU_STATUS_INDEX_OUT_OF_RANGE", ""), IndexError)
    assert isinstance(errors.exception_for(15, "MGPU_STATUS_NOT_SUPPORTED", ""), NotImplementedError)


def _gpu_present():
    try:
        mk.Handle().close()
        return True
    except mk.DeviceUnavailableError:
        return False


def test_no_gpu_raises_with_the_library_message():
    if _gpu_present():
        pytest.skip("a GPU is present")
    with pytest.raises(mk.DeviceUnavailableError) as info:
        mk.Handle()
    assert info.value.name in ("MGPU_STATUS_NO_DRIVER", "MGPU_STATUS_NO_DEVICE")
    assert info.value.message  # the library says why


def test_missing_optional_function_raises_not_implemented():
    missing = _capi._Missing("mgpu_future")
    with pytest.raises(NotImplementedError, match="mgpu_future"):
        missing(None)


# ------------------------------------------------------------ array description

class _CAI:
    def __init__(self, ptr, shape, typestr, strides=None):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": shape, "typestr": typestr,
                                         "strides": strides, "version": 3}


def test_cuda_array_interface():
    a = _arrays.describe(_CAI(4096, (3, 5), "<f4"))
    assert a == _arrays.Array(4096, (3, 5), (5, 1), "float32", 4, -1)
    t = _arrays.describe(_CAI(4096, (5, 3), "<f2", strides=(2, 10)))
    assert t.strides == (1, 5) and t.dtype == "float16"
    with pytest.raises(TypeError):
        _arrays.describe(_CAI(4096, (2,), "<c8"))
    with pytest.raises(TypeError):
        _arrays.describe(object())


class _DLPackArray:
    """A DLPack producer over fake device memory (device type kDLCUDA)."""

    def __init__(self, ptr, shape, code, bits, strides=None, offset=0):
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._strides = (ctypes.c_int64 * len(shape))(*strides) if strides else None
        self._t = _arrays._DLTensor(ptr, _arrays._DLDevice(2, 0), len(shape), _arrays._DLDataType(code, bits, 1),
                                    ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64)),
                                    ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64)) if strides else None,
                                    offset)
        self.streams = []

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self._t), b"dltensor", None)


def test_dlpack():
    x = _DLPackArray(8192, (4, 6), 4, 16, offset=64)
    a = _arrays.describe(x, stream=7)
    assert a == _arrays.Array(8192 + 64, (4, 6), (6, 1), "bfloat16", 2, 0)
    assert x.streams == [7]
    _arrays.describe(x)
    assert x.streams[-1] == 1  # the legacy default stream, as DLPack spells it
    y = _arrays.describe(_DLPackArray(8192, (4, 6), 10, 8, strides=(1, 4)))
    assert y.dtype == "float8_e4m3fn" and y.strides == (1, 4) and y.itemsize == 1


# ------------------------------------------------------- GEMM operand mapping

def _host(shape, strides, values):
    """A float32 host buffer laid out with the given element strides, and its Array."""
    size = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    buf = (ctypes.c_float * size)()
    for idx, v in values.items():
        buf[sum(i * s for i, s in zip(idx, strides))] = v
    return buf, _arrays.Array(ctypes.addressof(buf), shape, strides, "float32", 4, 0)


def _colmajor_gemm(p):
    """The C API's semantics on host memory: C = op(A) op(B), column-major, strided batches."""
    fl = ctypes.sizeof(ctypes.c_float)
    def at(ptr, ld, trans, i, j, b, stride):  # element (i, j) of op(M)
        r, c = (j, i) if trans else (i, j)
        return ctypes.c_float.from_address(ptr + (b * stride + r + c * ld) * fl).value
    for b in range(p["batch_count"]):
        for i in range(p["m"]):
            for j in range(p["n"]):
                s = sum(at(p["A"], p["lda"], p["transa"], i, q, b, p["stride_a"]) *
                        at(p["B"], p["ldb"], p["transb"], q, j, b, p["stride_b"]) for q in range(p["k"]))
                ctypes.c_float.from_address(p["C"] + (b * p["stride_c"] + i + j * p["ldc"]) * fl).value = s


LAYOUTS = {"row": lambda r, c: (c, 1), "col": lambda r, c: (1, r), "row_padded": lambda r, c: (c + 3, 1)}


@pytest.mark.parametrize("la", sorted(LAYOUTS))
@pytest.mark.parametrize("lb", sorted(LAYOUTS))
@pytest.mark.parametrize("lc", ["row", "col"])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_gemm_mapping(la, lb, lc, ta, tb):
    M, K, N = 3, 4, 2
    ash = (K, M) if ta else (M, K)
    bsh = (N, K) if tb else (K, N)
    av = {(i, j): float(i * 7 + j + 1) for i in range(ash[0]) for j in range(ash[1])}
    bv = {(i, j): float(i * 3 - j) for i in range(bsh[0]) for j in range(bsh[1])}
    abuf, a = _host(ash, LAYOUTS[la](*ash), av)
    bbuf, b = _host(bsh, LAYOUTS[lb](*bsh), bv)
    cbuf, c = _host((M, N), LAYOUTS[lc](M, N), {})
    p, _ = ops._gemm_problem(a, b, c, ta, tb)
    _colmajor_gemm(p)
    for i in range(M):
        for j in range(N):
            ref = sum((av[(q, i)] if ta else av[(i, q)]) * (bv[(j, q)] if tb else bv[(q, j)]) for q in range(K))
            got = cbuf[i * c.strides[0] + j * c.strides[1]]
            assert got == ref, (i, j)
    assert p["lda"] >= 1 and p["ldb"] >= 1 and p["ldc"] >= 1


def test_gemm_mapping_batched_with_shared_b():
    Bn, M, K, N = 2, 3, 2, 2
    av = {(z, i, j): float(z * 10 + i + j) for z in range(Bn) for i in range(M) for j in range(K)}
    bv = {(i, j): float(i - j + 1) for i in range(K) for j in range(N)}
    abuf, a = _host((Bn, M, K), (M * K, K, 1), av)
    bbuf, b = _host((K, N), (N, 1), bv)
    cbuf, c = _host((Bn, M, N), (M * N, N, 1), {})
    p, _ = ops._gemm_problem(a, b, c, False, False)
    assert p["batch_count"] == Bn and p["stride_a"] == 0 and p["stride_b"] == M * K  # library A is b
    _colmajor_gemm(p)
    for z in range(Bn):
        for i in range(M):
            for j in range(N):
                assert cbuf[z * M * N + i * N + j] == sum(av[(z, i, q)] * bv[(q, j)] for q in range(K))


def test_gemm_shape_errors():
    _, a = _host((3, 4), (4, 1), {})
    _, b = _host((5, 2), (2, 1), {})
    _, c = _host((3, 2), (2, 1), {})
    with pytest.raises(ValueError, match="op\\(a\\) is 3x4"):
        ops._gemm_problem(a, b, c, False, False)
    _, s = _host((3, 4), (8, 2), {})
    with pytest.raises(ValueError, match="stride 1"):
        ops._matrix(s, "a")


def test_rows_of_tables():
    _, t = _host((10, 2, 3), (6, 3, 1), {})
    assert ops._rows(t, "t") == (10, 6, 24)
    _, p = _host((10, 4), (8, 1), {})
    assert ops._rows(p, "t") == (10, 4, 32)
    _, bad = _host((10, 4), (1, 10), {})
    with pytest.raises(ValueError, match="contiguous"):
        ops._rows(bad, "t")


# ------------------------------------------------------------ attention backward (no device)

class _FakeLib:
    """Stands for the library: records the backward calls, asks for 4096 bytes of workspace."""

    def __init__(self):
        self.calls = []

    def check(self, status, call=None):
        assert status == 0, call

    def mgpu_attention_bwd_workspace_size(self, h, desc, need):
        d = desc._obj
        self.calls.append(("size", d.deterministic, d.causal, d.batch, d.seqlen_q, d.heads_q, d.heads_kv))
        need._obj.value = 4096 * (1 + d.deterministic)
        return 0

    def mgpu_attention_bwd(self, h, desc, *ptrs):
        self.calls.append(("bwd", desc._obj.deterministic) + ptrs)
        return 0


class _FakeHandle:
    stream = 0
    ptr = ctypes.c_void_p(1)

    def __init__(self):
        self.reserved = []

    def reserve_workspace(self, n):
        self.reserved.append(n)


def test_attention_bwd_workspace_and_prepared_call(monkeypatch):
    lib = _FakeLib()
    monkeypatch.setattr(ops, "library", lambda: lib)
    h = _FakeHandle()
    b, s, hq, hkv, d = 2, 64, 4, 2, 128
    q, o, do, dq = (_CAI(0x1000 * (i + 1), (b, s, hq, d), "<f2") for i in range(4))
    k, v, dk, dv = (_CAI(0x10000 * (i + 1), (b, s, hkv, d), "<f2") for i in range(4))
    lse = _CAI(0x100000, (b, hq, s), "<f4")
    args = (q, k, v, o, do, lse, dq, dk, dv)
    assert mk.attention_bwd_workspace_size(*args, causal=True, deterministic=True, handle=h) == 8192
    assert lib.calls[-1] == ("size", 1, 1, b, s, hq, hkv)
    call = mk.attention_bwd(*args, causal=True, handle=h, prepare=True)
    assert isinstance(call, mk.Call) and h.reserved == [4096]
    assert lib.calls[-1][0] == "size"  # prepared, not run
    call()
    assert lib.calls[-1] == ("bwd", 0, 0x1000, 0x10000, 0x20000, 0x2000, 0x3000, 0x100000, 0x4000, 0x30000,
                             0x40000)
