"""Handles and the operations of libmgpukernels on device arrays.

Every operation takes device arrays of any framework (see _arrays.py),
writes into the output arrays it is given (nothing is allocated) and queues
its work on the handle's stream; the default handle is one per thread,
created on first use on the thread's current CUDA context (device 0's
primary context when none is current) with the legacy default stream.
Failures raise the MgpuError subclass of the status (errors.py).

Shapes follow the frameworks' row-major conventions: gemm takes matrices as
the arrays see them ((rows, cols), any strides with one of them 1, an
optional leading batch dimension) and maps them onto the column-major C API
without copies; gather / scatter_add take (rows, ...) tables; attention
takes (batch, seq, heads, head_dim) tensors, or (total, heads, head_dim)
with cu_seqlens for variable lengths.

prepare=True makes an operation return a Call instead of running it: the
arguments are converted once, and calling the Call launches with no Python
work but the C call (benchmarks, tight loops).
"""
import ctypes
import math
import threading

from . import _capi
from ._arrays import describe
from ._capi import OP_N, OP_T, library


def _stream_value(stream):
    """A CUstream as an int from an int, a PyTorch/CuPy stream or a __cuda_stream__ object."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    for attr in ("cuda_stream", "ptr", "handle"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise TypeError(f"cannot read a CUDA stream from {type(stream).__name__}")


class Handle:
    """An mgpu_handle: bound to the device of the current CUDA context when created.

    One handle must not be used by two threads at once, and work queued
    through it must not run concurrently (use one handle per stream for
    concurrent streams). Closed by close(), by a with block, or when
    garbage-collected.
    """

    def __init__(self, stream=None):
        self._lib = library()
        h = ctypes.c_void_p()
        self._lib.check(self._lib.mgpu_create(ctypes.byref(h)), "mgpu_create")
        self._h = h
        self._stream = 0
        self.workspace_bytes = 0  # reserved through reserve_workspace
        if stream is not None:
            self.stream = stream

    @property
    def ptr(self):
        if self._h is None or not self._h.value:
            raise ValueError("the handle is closed")
        return self._h

    @property
    def stream(self):
        """The CUstream (int) work is queued on; set it with an int, a PyTorch or CuPy stream."""
        return self._stream

    @stream.setter
    def stream(self, stream):
        value = _stream_value(stream)
        self._lib.check(self._lib.mgpu_set_stream(self.ptr, ctypes.c_void_p(value)), "mgpu_set_stream")
        self._stream = value

    def reserve_workspace(self, nbytes):
        """Makes the handle own at least nbytes of device workspace (synchronous; not during capture)."""
        if nbytes > self.workspace_bytes:
            self._lib.check(self._lib.mgpu_reserve_workspace(self.ptr, ctypes.c_size_t(nbytes)),
                            "mgpu_reserve_workspace")
            self.workspace_bytes = nbytes

    def check_index_errors(self):
        """Raises IndexOutOfRangeError (or InvalidArgumentError for unsorted sorted-mode indices)
        when a gather / scatter_add since the last check met a bad index. Synchronises the stream."""
        self._lib.check(self._lib.mgpu_check_index_errors(self.ptr), "mgpu_check_index_errors")

    def close(self):
        if getattr(self, "_h", None) is not None and self._h.value:
            self._lib.mgpu_destroy(self._h)
        self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


_local = threading.local()


def default_handle():
    """This thread's handle, created on first use."""
    h = getattr(_local, "handle", None)
    if h is None:
        h = _local.handle = Handle()
    return h


def check_index_errors(handle=None):
    """Handle.check_index_errors on the given or default handle."""
    (handle or default_handle()).check_index_errors()


class Call:
    """One prepared library call: the C function, its converted arguments, the arrays kept alive."""

    __slots__ = ("_fn", "_args", "_keep", "_lib", "_name")

    def __init__(self, name, args, keep):
        self._lib = library()
        self._fn = getattr(self._lib, name)
        self._name = name
        self._args = args
        self._keep = keep

    def __call__(self):
        status = self._fn(*self._args)
        if status:
            self._lib.check(status, self._name)


def _run(name, args, keep, prepare):
    call = Call(name, args, keep)
    if prepare:
        return call
    call()
    return None


def _dtype_code(a, what):
    try:
        return _capi.DTYPE[a.dtype]
    except KeyError:
        raise TypeError(f"{what}: dtype {a.dtype} is not one libmgpukernels takes") from None


# ------------------------------------------------------------------- GEMM

def _matrix(a, what):
    """(batch, batch stride, rows, cols, op, ld): the array is op(M) for a column-major M of leading
    dimension ld, batch matrices batch stride apart (0 for a 2-D array)."""
    if len(a.shape) == 2:
        batch, bstride, (r, c), (s0, s1) = 1, 0, a.shape, a.strides
    elif len(a.shape) == 3:
        batch, bstride, r, c = a.shape[0], a.strides[0], a.shape[1], a.shape[2]
        s0, s1 = a.strides[1], a.strides[2]
        if batch == 1:
            bstride = 0
    else:
        raise ValueError(f"{what}: expected a 2-D matrix or a 3-D batch of matrices, got shape {a.shape}")
    if s0 == 1 and (c <= 1 or s1 >= max(r, 1)):
        return batch, bstride, r, c, OP_N, max(s1 if c > 1 else r, 1)
    if s1 == 1 and (r <= 1 or s0 >= max(c, 1)):
        return batch, bstride, r, c, OP_T, max(s0 if r > 1 else c, 1)
    raise ValueError(f"{what}: one of the last two dimensions must have stride 1 (strides {a.strides})")


def _gemm_problem(a, b, c, trans_a, trans_b):
    """The column-major problem for c = op(a) @ op(b) as the arrays see them: a dict of GemmDesc fields,
    and whether the library's m / n are c's columns / rows (c is row-major)."""
    ba, sa, ra, ca, fa, lda = _matrix(a, "a")
    bb, sb, rb, cb, fb, ldb = _matrix(b, "b")
    bc, sc, rc, cc, fc, ldc = _matrix(c, "c")
    M, K = (ca, ra) if trans_a else (ra, ca)
    K2, N = (cb, rb) if trans_b else (rb, cb)
    if K != K2 or (rc, cc) != (M, N):
        raise ValueError(f"gemm: op(a) is {M}x{K}, op(b) {K2}x{N}, c {rc}x{cc}")
    for batch, what in ((ba, "a"), (bb, "b")):
        if batch not in (1, bc):
            raise ValueError(f"gemm: {what} has {batch} matrices, c {bc}")
    fa ^= int(trans_a)
    fb ^= int(trans_b)
    p = dict(k=K, stride_c=sc, ldc=ldc, batch_count=bc, C=c.ptr, c_type=_dtype_code(c, "c"))
    ta, tb = _dtype_code(a, "a"), _dtype_code(b, "b")
    if fc == OP_N:  # c is column-major: C = op(a) op(b)
        p.update(m=M, n=N, transa=fa, A=a.ptr, a_type=ta, lda=lda, stride_a=sa,
                 transb=fb, B=b.ptr, b_type=tb, ldb=ldb, stride_b=sb)
    else:           # c is row-major: C^T = op(b)^T op(a)^T
        p.update(m=N, n=M, transa=fb ^ 1, A=b.ptr, a_type=tb, lda=ldb, stride_a=sb,
                 transb=fa ^ 1, B=a.ptr, b_type=ta, ldb=lda, stride_b=sa)
    return p, fc == OP_T


def gemm(a, b, c, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, handle=None, prepare=False):
    """c = alpha * op(a) @ op(b) + beta * c (op: transpose when trans_*), written over c.

    a, b: float16 / bfloat16 (equal), or float8 (e4m3fn / e5m2) in the layout the library takes;
    c: float16, bfloat16 or float32. 2-D matrices or 3-D batches (a 2-D a or b is shared by every
    batch entry). Products accumulate in fp32 (mgpu_gemm, mgpu_gemm_strided_batched)."""
    h = handle or default_handle()
    arrays = (a, b, c)
    a, b, c = (describe(x, h.stream) for x in arrays)
    p, _ = _gemm_problem(a, b, c, trans_a, trans_b)
    al, be = ctypes.c_float(alpha), ctypes.c_float(beta)
    common = [h.ptr, p["transa"], p["transb"], p["m"], p["n"], p["k"], ctypes.byref(al)]
    if p["batch_count"] == 1 and p["stride_a"] == 0 and p["stride_b"] == 0:
        args = common + [p["A"], p["a_type"], p["lda"], p["B"], p["b_type"], p["ldb"], ctypes.byref(be),
                         p["C"], p["c_type"], p["ldc"]]
        return _run("mgpu_gemm", args, (arrays, al, be), prepare)
    args = common + [p["A"], p["a_type"], p["lda"], p["stride_a"], p["B"], p["b_type"], p["ldb"], p["stride_b"],
                     ctypes.byref(be), p["C"], p["c_type"], p["ldc"], p["stride_c"], p["batch_count"]]
    return _run("mgpu_gemm_strided_batched", args, (arrays, al, be), prepare)


def gemm_workspace_size(a, b, c, *, trans_a=False, trans_b=False, handle=None):
    """Bytes of handle workspace the preferred plan of gemm(a, b, c, ...) wants (0: none): aligned
    copies of operands TMA cannot read, split-K partials (mgpu_gemm_ex_workspace_size). Give the
    handle that much with handle.reserve_workspace(n) before capturing a graph; with less, the call
    runs on a slower plan."""
    h = handle or default_handle()
    a, b, c = (describe(x, h.stream) for x in (a, b, c))
    p, _ = _gemm_problem(a, b, c, trans_a, trans_b)
    desc = _capi.new_desc(_capi.GemmDesc, alpha=1.0, beta=0.0, **p)
    lib = library()
    need = ctypes.c_size_t()
    lib.check(lib.mgpu_gemm_ex_workspace_size(h.ptr, ctypes.byref(desc), ctypes.byref(need)),
              "mgpu_gemm_ex_workspace_size")
    return need.value


def gemm_ex(a, b, c, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, scale_a=None, scale_b=None,
            scale_d=None, bias=None, bias_per="column", activation="none", handle=None, prepare=False):
    """c = scale_d * act(alpha * scale_a * scale_b * op(a) @ op(b) + beta * c + bias) (mgpu_gemm_ex).

    scale_*: None or a one-element float32 device array (read when the kernel runs).
    bias: None or a device vector added to every row of c (bias_per="column": one value per column
    of c, length c.shape[-1], as nn.Linear) or to every column (bias_per="row", length
    c.shape[-2]); a 2-D bias gives one vector per batch entry. bias dtype: c's or float32.
    activation: "none", "relu" or "gelu" (tanh approximation). fp8 inputs work on sm_90a with the
    layout c = a @ b.T for row-major a, b, c (cuBLASLt's TN)."""
    h = handle or default_handle()
    arrays = (a, b, c, scale_a, scale_b, scale_d, bias)
    a, b, c = (describe(x, h.stream) for x in arrays[:3])
    p, c_row_major = _gemm_problem(a, b, c, trans_a, trans_b)
    if activation not in _capi.ACTIVATION:
        raise ValueError(f"activation must be one of {sorted(_capi.ACTIVATION)}, not {activation!r}")
    if bias_per not in ("column", "row"):
        raise ValueError(f"bias_per must be 'column' or 'row', not {bias_per!r}")
    desc = _capi.new_desc(_capi.GemmDesc, alpha=alpha, beta=beta, activation=_capi.ACTIVATION[activation],
                          bias_type=_capi.DTYPE["float32"], bias_mode=_capi.BIAS_PER_ROW, **p)
    for name, x in (("scale_a", scale_a), ("scale_b", scale_b), ("scale_d", scale_d)):
        if x is not None:
            setattr(desc, name, describe(x, h.stream).ptr)
    if bias is not None:
        bd = describe(bias, h.stream)
        desc.bias = bd.ptr
        desc.bias_type = _dtype_code(bd, "bias")
        desc.bias_batch_stride = bd.strides[0] if len(bd.shape) == 2 and bd.shape[0] > 1 else 0
        # The library's rows are c's columns when c is row-major.
        per_library_row = (bias_per == "column") == c_row_major
        desc.bias_mode = _capi.BIAS_PER_ROW if per_library_row else _capi.BIAS_PER_COLUMN
    return _run("mgpu_gemm_ex", [h.ptr, ctypes.byref(desc)], (arrays, desc), prepare)


# ---------------------------------------------------------- gather / scatter

def _rows(x, what):
    """(rows, elements per row, row stride in bytes) of an array whose rows are its first dimension
    and whose other dimensions are contiguous."""
    if len(x.shape) == 0:
        raise ValueError(f"{what}: expected at least one dimension")
    inner = x.shape[1:]
    step = 1
    for n, s in zip(reversed(inner), reversed(x.strides[1:])):
        if n > 1 and s != step:
            raise ValueError(f"{what}: all dimensions but the first must be contiguous (strides {x.strides})")
        step *= n
    row_elems = math.prod(inner)
    stride = x.strides[0] if x.shape[0] > 1 else row_elems
    return x.shape[0], row_elems, stride * x.itemsize


def _index(x, what="index"):
    if len(x.shape) != 1 or (x.shape[0] > 1 and x.strides[0] != 1):
        raise ValueError(f"{what}: expected a contiguous 1-D array")
    if x.dtype not in ("int32", "int64"):
        raise TypeError(f"{what}: dtype must be int32 or int64, not {x.dtype}")
    return _capi.INDEX_I32 if x.dtype == "int32" else _capi.INDEX_I64, x.shape[0]


def gather(table, index, out, *, handle=None, prepare=False):
    """out[i] = table[index[i]] (mgpu_gather): any element size of 1, 2, 4 or 8 bytes, int32 or int64
    indices. Out-of-range indices give zero rows and are reported by check_index_errors()."""
    h = handle or default_handle()
    arrays = (table, index, out)
    t, i, o = (describe(x, h.stream) for x in arrays)
    t_rows, t_elems, t_stride = _rows(t, "table")
    o_rows, o_elems, o_stride = _rows(o, "out")
    itype, n = _index(i)
    if o_rows != n or o_elems != t_elems or o.itemsize != t.itemsize:
        raise ValueError(f"gather: out has shape {o.shape} ({o.dtype}), expected {(n,) + t.shape[1:]} ({t.dtype})")
    desc = _capi.new_desc(_capi.GatherDesc, src=t.ptr, src_rows=t_rows, src_row_stride=t_stride, dst=o.ptr,
                          dst_row_stride=o_stride, index=i.ptr, index_type=itype, n_indices=n,
                          row_elems=t_elems, elem_size=t.itemsize)
    return _run("mgpu_gather", [h.ptr, ctypes.byref(desc)], (arrays, desc), prepare)


def scatter_add(src, index, dst, *, sorted=False, handle=None, prepare=False):
    """dst[index[i]] += src[i] (mgpu_scatter_add) for float32, bfloat16 or float16. sorted=True: index
    must be ascending and the sums are bitwise reproducible; else atomic additions."""
    h = handle or default_handle()
    arrays = (src, index, dst)
    s, i, d = (describe(x, h.stream) for x in arrays)
    s_rows, s_elems, s_stride = _rows(s, "src")
    d_rows, d_elems, d_stride = _rows(d, "dst")
    itype, n = _index(i)
    if s_rows != n or s_elems != d_elems:
        raise ValueError(f"scatter_add: src has shape {s.shape}, expected {(n,) + d.shape[1:]}")
    desc = _capi.new_desc(_capi.ScatterAddDesc, src=s.ptr, src_row_stride=s_stride, dst=d.ptr, dst_rows=d_rows,
                          dst_row_stride=d_stride, index=i.ptr, index_type=itype, n_indices=n,
                          row_elems=d_elems, dtype=_dtype_code(d, "dst"),
                          mode=_capi.SCATTER_SORTED if sorted else _capi.SCATTER_ATOMIC)
    return _run("mgpu_scatter_add", [h.ptr, ctypes.byref(desc)], (arrays, desc), prepare)


# -------------------------------------------------------------- attention

def _strides(x, what, varlen):
    """AttentionStrides of a (batch, seq, heads, dim) or, varlen, (total, heads, dim) array."""
    if len(x.shape) != (3 if varlen else 4):
        raise ValueError(f"{what}: expected {'(total, heads, head_dim)' if varlen else '(batch, seq, heads, head_dim)'}"
                         f", got shape {x.shape}")
    if x.shape[-1] > 1 and x.strides[-1] != 1:
        raise ValueError(f"{what}: head_dim must be contiguous (strides {x.strides})")
    st = x.strides
    return _capi.AttentionStrides(0, st[0], st[1]) if varlen else _capi.AttentionStrides(st[0], st[1], st[2])


def _attention_fields(q, k, v, o, causal, softmax_scale, window, softcap, cu_seqlens_q, cu_seqlens_k,
                      max_seqlen_q, max_seqlen_k):
    """The fields attention forward and backward descriptors share."""
    varlen = cu_seqlens_q is not None or cu_seqlens_k is not None
    if varlen and (cu_seqlens_q is None or cu_seqlens_k is None or max_seqlen_q is None or max_seqlen_k is None):
        raise ValueError("variable lengths need cu_seqlens_q, cu_seqlens_k, max_seqlen_q and max_seqlen_k")
    left, right = window
    f = dict(dtype=_dtype_code(q, "q"), softmax_scale=softmax_scale or 0.0, causal=int(bool(causal)),
             window_left=left, window_right=right, softcap=softcap,
             heads_q=q.shape[-2], heads_kv=k.shape[-2], head_dim=q.shape[-1],
             q_strides=_strides(q, "q", varlen), k_strides=_strides(k, "k", varlen),
             v_strides=_strides(v, "v", varlen), o_strides=_strides(o, "out", varlen))
    if varlen:
        f.update(batch=cu_seqlens_q.shape[0] - 1, seqlen_q=max_seqlen_q, seqlen_k=max_seqlen_k,
                 cu_seqlens_q=cu_seqlens_q.ptr, cu_seqlens_k=cu_seqlens_k.ptr, total_q=q.shape[0],
                 total_k=k.shape[0])
    else:
        f.update(batch=q.shape[0], seqlen_q=q.shape[1], seqlen_k=k.shape[1])
    return f


def _descale_fields(q, descales):
    """The fp8 fields of an attention_fwd descriptor: qkv_fp8 and the descale arrays (float32, one
    element, (heads_kv,) or (batch, heads_kv); all three alike) with their strides."""
    f = dict(qkv_fp8=1)
    shaped = None
    for name, d in zip(("q_descale", "k_descale", "v_descale"), descales):
        if d is None:
            continue
        if d.dtype != "float32":
            raise TypeError(f"{name}: float32 expected, got {d.dtype}")
        f[name] = d.ptr
        if shaped is not None and (d.shape != shaped.shape or d.strides != shaped.strides):
            raise ValueError("q_descale, k_descale and v_descale must have one shape and strides")
        shaped = d
    if shaped is not None and len(shaped.shape) >= 1 and shaped.shape[-1] > 1:
        f["descale_head_stride"] = shaped.strides[-1]
    if shaped is not None and len(shaped.shape) == 2 and shaped.shape[0] > 1:
        f["descale_batch_stride"] = shaped.strides[0]
    return f


def attention_fwd(q, k, v, out, lse=None, *, causal=False, softmax_scale=None, window=(-1, -1), softcap=0.0,
                  cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None, seqused_k=None,
                  block_table=None, q_descale=None, k_descale=None, v_descale=None, handle=None, prepare=False):
    """out = softmax(scale * q k^T [masked]) v (mgpu_attention_fwd), float16 or bfloat16.

    q, out: (batch, seq_q, heads_q, head_dim); k, v: (batch, seq_k, heads_kv, head_dim); or, with
    cu_seqlens_q / cu_seqlens_k (int32, batch + 1 offsets) and the longest lengths max_seqlen_*,
    packed (total, heads, head_dim). lse: None or float32 (batch, heads_q, seq_q) (varlen:
    (heads_q, total_q)), what the backward pass reads. window = (left, right), -1 unbounded;
    softmax_scale None: 1 / sqrt(head_dim). seqused_k: None or int32 (batch,), the keys each
    sequence uses. block_table: None or int32 (batch, max_blocks_per_seq) page indices; k, v are
    then caches (num_pages, page_size, heads_kv, head_dim), seqused_k is required and
    max_seqlen_k (default max_blocks_per_seq * page_size) bounds it. fp8: q, k, v float8_e4m3fn (out
    float16 / bfloat16) with optional float32 descale factors q_descale, k_descale, v_descale of one
    element, (heads_kv,) or (batch, heads_kv) (include/mgpukernels.h, "fp8")."""
    h = handle or default_handle()
    arrays = (q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, seqused_k, block_table, q_descale, k_descale, v_descale)
    dq, dk, dv, do, dl, cq, ck, du, dt, qd, kd, vd = (None if x is None else describe(x, h.stream) for x in arrays)
    f = _attention_fields(dq, dk, dv, do, causal, softmax_scale, window, softcap, cq, ck, max_seqlen_q, max_seqlen_k)
    if dq.dtype == "float8_e4m3fn":
        f.update(dtype=_dtype_code(do, "out"), **_descale_fields(dq, (qd, kd, vd)))
    if du is not None:
        f.update(seqused_k=du.ptr)
    if dt is not None:
        pages, page_size = dk.shape[0], dk.shape[1]
        f.update(block_table=dt.ptr, max_blocks_per_seq=dt.shape[1], page_size=page_size, num_pages=pages,
                 batch=dq.shape[0], seqlen_k=max_seqlen_k or dt.shape[1] * page_size)
    desc = _capi.new_desc(_capi.AttentionFwdDesc, **f)
    args = [h.ptr, ctypes.byref(desc), dq.ptr, dk.ptr, dv.ptr, do.ptr, dl.ptr if dl is not None else None]
    return _run("mgpu_attention_fwd", args, (arrays, desc), prepare)


def kv_cache_append(k_new, v_new, k_cache, v_cache, cache_seqlens, block_table=None, *, handle=None,
                    prepare=False):
    """Writes k_new, v_new (batch, seqlen_new, heads_kv, head_dim) into the caches at positions
    cache_seqlens[b] + j (mgpu_kv_cache_append). Caches: (num_pages, page_size, heads_kv, head_dim)
    with block_table int32 (batch, max_blocks_per_seq), or without one (batch or more, capacity,
    heads_kv, head_dim), sequence b in row b. cache_seqlens (int32, batch) is read, not updated."""
    h = handle or default_handle()
    arrays = (k_new, v_new, k_cache, v_cache, cache_seqlens, block_table)
    kn, vn, kc, vc, cl, bt = (None if x is None else describe(x, h.stream) for x in arrays)
    if vn.shape != kn.shape or vc.shape != kc.shape or vn.strides != kn.strides or vc.strides != kc.strides:
        raise ValueError("v_new / v_cache must have the shapes and strides of k_new / k_cache")
    desc = _capi.new_desc(_capi.KvCacheAppendDesc, batch=kn.shape[0], seqlen_new=kn.shape[1],
                          heads_kv=kn.shape[2], head_dim=kn.shape[3], dtype=_dtype_code(kn, "k_new"),
                          cache_seqlens=cl.ptr, block_table=bt.ptr if bt is not None else None,
                          max_blocks_per_seq=bt.shape[1] if bt is not None else 0, page_size=kc.shape[1],
                          num_pages=kc.shape[0], new_strides=_strides(kn, "k_new", False),
                          cache_strides=_strides(kc, "k_cache", False))
    args = [h.ptr, ctypes.byref(desc), kn.ptr, vn.ptr, kc.ptr, vc.ptr]
    return _run("mgpu_kv_cache_append", args, (arrays, desc), prepare)


def attention_bwd_supported():
    """Whether the loaded library has mgpu_attention_bwd."""
    return library().has("mgpu_attention_bwd")


def _attention_bwd_desc(h, q, k, v, out, dout, lse, dq, dk, dv, causal, softmax_scale, window, softcap,
                        cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, deterministic):
    """(AttentionBwdDesc, the described arrays) of an attention_bwd call."""
    arrays = (q, k, v, out, dout, lse, dq, dk, dv, cu_seqlens_q, cu_seqlens_k)
    aq, ak, av, ao, ado, al, adq, adk, adv, cq, ck = (None if x is None else describe(x, h.stream) for x in arrays)
    f = _attention_fields(aq, ak, av, ao, causal, softmax_scale, window, softcap, cq, ck, max_seqlen_q, max_seqlen_k)
    varlen = cq is not None
    desc = _capi.new_desc(_capi.AttentionBwdDesc, deterministic=int(bool(deterministic)),
                          do_strides=_strides(ado, "dout", varlen), dq_strides=_strides(adq, "dq", varlen),
                          dk_strides=_strides(adk, "dk", varlen), dv_strides=_strides(adv, "dv", varlen), **f)
    return desc, (aq, ak, av, ao, ado, al, adq, adk, adv)


def _attention_bwd_need(h, desc):
    lib = library()
    need = ctypes.c_size_t()
    lib.check(lib.mgpu_attention_bwd_workspace_size(h.ptr, ctypes.byref(desc), ctypes.byref(need)),
              "mgpu_attention_bwd_workspace_size")
    return need.value


def attention_bwd_workspace_size(q, k, v, out, dout, lse, dq, dk, dv, *, causal=False, softmax_scale=None,
                                 window=(-1, -1), softcap=0.0, cu_seqlens_q=None, cu_seqlens_k=None,
                                 max_seqlen_q=None, max_seqlen_k=None, deterministic=False, handle=None):
    """Bytes of handle workspace attention_bwd with these arguments needs
    (mgpu_attention_bwd_workspace_size); attention_bwd reserves them itself."""
    h = handle or default_handle()
    desc, _ = _attention_bwd_desc(h, q, k, v, out, dout, lse, dq, dk, dv, causal, softmax_scale, window, softcap,
                                  cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, deterministic)
    return _attention_bwd_need(h, desc)


def attention_bwd(q, k, v, out, dout, lse, dq, dk, dv, *, causal=False, softmax_scale=None, window=(-1, -1),
                  softcap=0.0, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None,
                  deterministic=False, handle=None, prepare=False):
    """dq, dk, dv of attention_fwd (mgpu_attention_bwd) given its q, k, v, out, lse and dout; the mask
    arguments must be those of the forward call. Reserves the handle workspace the call needs
    (synchronously, so run one call before capturing a graph; with prepare=True the reservation
    is made when preparing). NotImplementedError when the loaded library has no attention backward."""
    h = handle or default_handle()
    arrays = (q, k, v, out, dout, lse, dq, dk, dv, cu_seqlens_q, cu_seqlens_k)
    desc, (aq, ak, av, ao, ado, al, adq, adk, adv) = _attention_bwd_desc(
        h, q, k, v, out, dout, lse, dq, dk, dv, causal, softmax_scale, window, softcap, cu_seqlens_q, cu_seqlens_k,
        max_seqlen_q, max_seqlen_k, deterministic)
    h.reserve_workspace(_attention_bwd_need(h, desc))
    args = [h.ptr, ctypes.byref(desc), aq.ptr, ak.ptr, av.ptr, ao.ptr, ado.ptr, al.ptr, adq.ptr, adk.ptr, adv.ptr]
    return _run("mgpu_attention_bwd", args, (arrays, desc), prepare)
