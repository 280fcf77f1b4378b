"""The C API of libmgpukernels through ctypes: structures, prototypes, loading.

Every structure and prototype of include/mgpukernels.h that Python uses is
declared here and nowhere else. To bind a new C function, add its structure
(if any) and one line to _PROTOTYPES; functions marked optional may be
missing from an older library, and calling them then raises
NotImplementedError naming the symbol.

The library is loaded on first use: the file named by the environment
variable MGPU_LIBRARY when set (a build tree's libmgpukernels.so), else the
installed system library libmgpukernels.so.0 found by the dynamic loader.
"""
import ctypes
import os
import threading
from ctypes import POINTER, c_char_p, c_float, c_int, c_int64, c_size_t, c_void_p

from .errors import LibraryNotFoundError, exception_for

SONAME = "libmgpukernels.so.0"
ABI_MAJOR = 0  # MGPU_VERSION_MAJOR this module was written for

# enum values of include/mgpukernels.h
DTYPE = {"float16": 0, "bfloat16": 1, "float32": 2, "float8_e4m3fn": 3, "float8_e5m2": 4}
OP_N, OP_T = 0, 1
INDEX_I32, INDEX_I64 = 0, 1
ACTIVATION = {"none": 0, "relu": 1, "gelu": 2}
BIAS_PER_ROW, BIAS_PER_COLUMN = 0, 1
SCATTER_ATOMIC, SCATTER_SORTED = 0, 1


class GemmDesc(ctypes.Structure):
    """mgpu_gemm_desc."""
    _fields_ = [
        ("struct_size", c_size_t),
        ("transa", c_int), ("transb", c_int),
        ("m", c_int64), ("n", c_int64), ("k", c_int64),
        ("alpha", c_float), ("beta", c_float),
        ("A", c_void_p), ("a_type", c_int), ("lda", c_int64), ("stride_a", c_int64),
        ("B", c_void_p), ("b_type", c_int), ("ldb", c_int64), ("stride_b", c_int64),
        ("C", c_void_p), ("c_type", c_int), ("ldc", c_int64), ("stride_c", c_int64),
        ("batch_count", c_int64),
        ("scale_a", c_void_p), ("scale_b", c_void_p), ("scale_d", c_void_p),
        ("bias", c_void_p), ("bias_type", c_int), ("bias_mode", c_int), ("bias_batch_stride", c_int64),
        ("activation", c_int),
    ]


class GatherDesc(ctypes.Structure):
    """mgpu_gather_desc."""
    _fields_ = [
        ("struct_size", c_size_t),
        ("src", c_void_p), ("src_rows", c_int64), ("src_row_stride", c_int64),
        ("dst", c_void_p), ("dst_row_stride", c_int64),
        ("index", c_void_p), ("index_type", c_int), ("n_indices", c_int64),
        ("row_elems", c_int64), ("elem_size", c_int),
    ]


class ScatterAddDesc(ctypes.Structure):
    """mgpu_scatter_add_desc."""
    _fields_ = [
        ("struct_size", c_size_t),
        ("src", c_void_p), ("src_row_stride", c_int64),
        ("dst", c_void_p), ("dst_rows", c_int64), ("dst_row_stride", c_int64),
        ("index", c_void_p), ("index_type", c_int), ("n_indices", c_int64),
        ("row_elems", c_int64), ("dtype", c_int), ("mode", c_int),
    ]


class AttentionStrides(ctypes.Structure):
    """mgpu_attention_strides (elements)."""
    _fields_ = [("batch", c_int64), ("seq", c_int64), ("head", c_int64)]


# The fields mgpu_attention_fwd_desc and mgpu_attention_bwd_desc share, in order.
_ATTENTION_COMMON = [
    ("struct_size", c_size_t),
    ("batch", c_int64), ("seqlen_q", c_int64), ("seqlen_k", c_int64),
    ("heads_q", c_int64), ("heads_kv", c_int64), ("head_dim", c_int64),
    ("dtype", c_int), ("softmax_scale", c_float), ("causal", c_int),
    ("window_left", c_int), ("window_right", c_int), ("softcap", c_float),
    ("cu_seqlens_q", c_void_p), ("cu_seqlens_k", c_void_p),
    ("total_q", c_int64), ("total_k", c_int64),
    ("q_strides", AttentionStrides), ("k_strides", AttentionStrides),
    ("v_strides", AttentionStrides), ("o_strides", AttentionStrides),
]


class AttentionFwdDesc(ctypes.Structure):
    """mgpu_attention_fwd_desc: the shared fields, the inference fields (seqused_k, paged K/V), the fp8 fields."""
    _fields_ = _ATTENTION_COMMON + [
        ("seqused_k", c_void_p), ("block_table", c_void_p), ("max_blocks_per_seq", c_int64),
        ("page_size", c_int64), ("num_pages", c_int64),
        ("qkv_fp8", c_int), ("q_descale", c_void_p), ("k_descale", c_void_p), ("v_descale", c_void_p),
        ("descale_batch_stride", c_int64), ("descale_head_stride", c_int64),
    ]


class KvCacheAppendDesc(ctypes.Structure):
    """mgpu_kv_cache_append_desc."""
    _fields_ = [
        ("struct_size", c_size_t), ("batch", c_int64), ("seqlen_new", c_int64), ("heads_kv", c_int64),
        ("head_dim", c_int64), ("dtype", c_int), ("cache_seqlens", c_void_p), ("block_table", c_void_p),
        ("max_blocks_per_seq", c_int64), ("page_size", c_int64), ("num_pages", c_int64),
        ("new_strides", AttentionStrides), ("cache_strides", AttentionStrides),
    ]


class AttentionBwdDesc(ctypes.Structure):
    """mgpu_attention_bwd_desc: the forward's fields, the gradients' strides, deterministic."""
    _fields_ = _ATTENTION_COMMON + [
        ("do_strides", AttentionStrides), ("dq_strides", AttentionStrides),
        ("dk_strides", AttentionStrides), ("dv_strides", AttentionStrides),
        ("deterministic", c_int),
    ]


def new_desc(cls, **fields):
    """A descriptor with struct_size set (as the C _INIT macros do) and the given fields."""
    d = cls()
    d.struct_size = ctypes.sizeof(cls)
    for name, value in fields.items():
        setattr(d, name, value)
    return d


_H = c_void_p
_P = c_void_p
# name: (argument types, optional). Every function returns mgpu_status (int)
# unless listed in _RESTYPES.
_PROTOTYPES = {
    "mgpu_version": ([], False),
    "mgpu_status_string": ([c_int], False),
    "mgpu_last_error_message": ([], False),
    "mgpu_create": ([POINTER(c_void_p)], False),
    "mgpu_destroy": ([_H], False),
    "mgpu_set_stream": ([_H, _P], False),
    "mgpu_get_stream": ([_H, POINTER(c_void_p)], False),
    "mgpu_gemm": ([_H, c_int, c_int, c_int64, c_int64, c_int64, POINTER(c_float),
                   _P, c_int, c_int64, _P, c_int, c_int64, POINTER(c_float), _P, c_int, c_int64], False),
    "mgpu_gemm_strided_batched": ([_H, c_int, c_int, c_int64, c_int64, c_int64, POINTER(c_float),
                                   _P, c_int, c_int64, c_int64, _P, c_int, c_int64, c_int64,
                                   POINTER(c_float), _P, c_int, c_int64, c_int64, c_int64], False),
    "mgpu_gemm_ex": ([_H, POINTER(GemmDesc)], False),
    "mgpu_gather": ([_H, POINTER(GatherDesc)], False),
    "mgpu_scatter_add": ([_H, POINTER(ScatterAddDesc)], False),
    "mgpu_check_index_errors": ([_H], False),
    "mgpu_attention_fwd": ([_H, POINTER(AttentionFwdDesc), _P, _P, _P, _P, _P], False),
    # Joining the library with attention backward and handle workspaces:
    "mgpu_set_workspace": ([_H, _P, c_size_t], True),
    "mgpu_reserve_workspace": ([_H, c_size_t], True),
    "mgpu_attention_bwd_workspace_size": ([_H, POINTER(AttentionBwdDesc), POINTER(c_size_t)], True),
    "mgpu_attention_bwd": ([_H, POINTER(AttentionBwdDesc), _P, _P, _P, _P, _P, _P, _P, _P, _P], True),
    "mgpu_gemm_workspace_size": ([_H, c_int, c_int, c_int64, c_int64, c_int64, _P, c_int, c_int64,
                                  _P, c_int, c_int64, _P, c_int, c_int64, POINTER(c_size_t)], True),
    "mgpu_gemm_ex_workspace_size": ([_H, POINTER(GemmDesc), POINTER(c_size_t)], True),
    "mgpu_kv_cache_append": ([_H, POINTER(KvCacheAppendDesc), _P, _P, _P, _P], True),
}
_RESTYPES = {"mgpu_version": c_int, "mgpu_status_string": c_char_p, "mgpu_last_error_message": c_char_p}


class _Missing:
    """Stands for an optional function the loaded library does not export."""

    def __init__(self, name):
        self.name = name

    def __call__(self, *args):
        raise NotImplementedError(f"the loaded libmgpukernels has no {self.name} (a newer library has it)")


class Library:
    """The loaded library: one attribute per C function of _PROTOTYPES."""

    def __init__(self, path):
        try:
            self._cdll = ctypes.CDLL(path)
        except OSError as e:
            raise LibraryNotFoundError(
                f"cannot load {path} ({e}); install libmgpukernels0 or set MGPU_LIBRARY to the "
                "path of libmgpukernels.so") from e
        self.path = path
        for name, (argtypes, optional) in _PROTOTYPES.items():
            try:
                fn = getattr(self._cdll, name)
            except AttributeError:
                if not optional:
                    raise LibraryNotFoundError(f"{path} does not export {name}: not libmgpukernels?")
                setattr(self, name, _Missing(name))
                continue
            fn.argtypes = argtypes
            fn.restype = _RESTYPES.get(name, c_int)
            setattr(self, name, fn)
        self.version = self.mgpu_version()
        if self.version // 10000 != ABI_MAJOR:
            raise LibraryNotFoundError(f"{path} is libmgpukernels {self.version_string}; this module needs "
                                       f"{ABI_MAJOR}.x")

    @property
    def version_string(self):
        v = self.version
        return f"{v // 10000}.{v // 100 % 100}.{v % 100}"

    def has(self, name):
        return not isinstance(getattr(self, name, None), _Missing)

    def check(self, status, call=None):
        """Raises the exception for a status other than SUCCESS, with the library's message."""
        if status != 0:
            name = self.mgpu_status_string(status).decode()
            message = self.mgpu_last_error_message().decode(errors="replace")
            raise exception_for(status, name, message, call)


_lock = threading.Lock()
_library = None


def library():
    """The loaded libmgpukernels (loaded on the first call)."""
    global _library
    if _library is None:
        with _lock:
            if _library is None:
                _library = Library(os.environ.get("MGPU_LIBRARY") or SONAME)
    return _library
