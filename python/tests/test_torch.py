"""The bindings on a GPU against PyTorch: gemm (row-major, transposed views, batches, beta),
gemm_ex (bias, activations, fp8), gather and scatter_add (with bad indices), attention forward
against scaled_dot_product_attention (causal, GQA, LSE), the torch integration (autograd, the
backward against SDPA's, custom operators under torch.compile), prepared calls, and arrays of
CuPy / JAX when present.
Skipped without PyTorch, a CUDA device, or a device the library has kernels for (cc 9.0)."""
import math

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import mgpukernels as mk  # noqa: E402

DEV = torch.device("cuda")
HOPPER = torch.cuda.get_device_capability() == (9, 0)
needs_hopper = pytest.mark.skipif(not HOPPER, reason="kernels for this op exist for compute capability 9.0 only")
# paged K/V, seqused_k and the KV-cache append: 9.0 and 10.0 (10.0 not yet run on hardware)
needs_serving_arch = pytest.mark.skipif(torch.cuda.get_device_capability() not in ((9, 0), (10, 0)),
                                        reason="paged K/V and the KV-cache append need compute capability 9.0 or 10.0")


@pytest.fixture(scope="module")
def h():
    torch.zeros(1, device=DEV)  # PyTorch's context is current: the handle binds to it
    with mk.Handle(stream=torch.cuda.current_stream()) as handle:
        yield handle


def rel_err(x, ref):
    x, ref = x.double(), ref.double()
    assert torch.isfinite(x).all()
    return ((x - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def randn(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape, device=DEV, dtype=torch.float32).to(dtype)


# -------------------------------------------------------------------- GEMM

@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("out_dtype", [torch.float32, "same"])
def test_gemm_row_major(h, dtype, out_dtype):
    out_dtype = dtype if out_dtype == "same" else out_dtype
    a, b = randn(300, 130, dtype=dtype), randn(130, 77, dtype=dtype)
    c = torch.full((300, 77), float("nan"), device=DEV, dtype=out_dtype)
    mk.gemm(a, b, c, handle=h)
    assert rel_err(c, a.float() @ b.float()) < 1e-2


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_gemm_transposes_and_views(h, ta, tb):
    M, K, N = 96, 64, 80
    a = randn(K, M) if ta else randn(M, K)
    b = randn(N, K) if tb else randn(K, N)
    ref = (a.float().T if ta else a.float()) @ (b.float().T if tb else b.float())
    c = torch.empty(N, M, device=DEV).T  # column-major output view
    mk.gemm(a, b, c, trans_a=ta, trans_b=tb, handle=h)
    assert rel_err(c, ref) < 1e-2
    c2 = torch.empty(M, N, device=DEV)
    mk.gemm(a.T.contiguous().T, b, c2, trans_a=ta, trans_b=tb, handle=h)  # a as a column-major view
    assert rel_err(c2, ref) < 1e-2


def test_gemm_batched_beta(h):
    a, b = randn(3, 64, 32), randn(32, 48)  # b shared by the batch
    c0 = torch.randn(3, 64, 48, device=DEV)
    c = c0.clone()
    mk.gemm(a, b, c, alpha=0.5, beta=2.0, handle=h)
    assert rel_err(c, 0.5 * (a.float() @ b.float()) + 2.0 * c0) < 1e-2


@needs_hopper
@pytest.mark.parametrize("activation", ["none", "relu", "gelu"])
def test_gemm_ex_bias_activation(h, activation):
    x, w = randn(200, 128), randn(96, 128)  # nn.Linear: y = x w^T + bias
    bias = torch.randn(96, device=DEV)
    y = torch.empty(200, 96, device=DEV)
    mk.gemm_ex(x, w, y, trans_b=True, bias=bias, activation=activation, handle=h)
    ref = x.float() @ w.float().T + bias
    ref = {"none": ref, "relu": torch.relu(ref), "gelu": torch.nn.functional.gelu(ref, approximate="tanh")}[activation]
    assert rel_err(y, ref) < 1e-2
    rb = torch.randn(200, device=DEV)  # one value per row of y
    mk.gemm_ex(x, w, y, trans_b=True, bias=rb, bias_per="row", handle=h)
    assert rel_err(y, x.float() @ w.float().T + rb[:, None]) < 1e-2


@needs_hopper
@pytest.mark.skipif(not hasattr(torch, "float8_e4m3fn"), reason="no float8 in this PyTorch")
def test_gemm_ex_fp8_scales(h):
    x, w = randn(128, 256, dtype=torch.float8_e4m3fn), randn(64, 256, dtype=torch.float8_e4m3fn)
    sa, sb = torch.tensor([0.5], device=DEV), torch.tensor([4.0], device=DEV)
    y = torch.empty(128, 64, device=DEV)
    mk.gemm_ex(x, w, y, trans_b=True, scale_a=sa, scale_b=sb, handle=h)
    assert rel_err(y, 2.0 * (x.float() @ w.float().T)) < 1e-2


def test_gemm_errors_carry_the_library_message(h):
    a, b = randn(64, 32, dtype=torch.float16), randn(32, 16, dtype=torch.bfloat16)
    with pytest.raises(mk.DtypeError) as info:
        mk.gemm(a, b, torch.empty(64, 16, device=DEV), handle=h)
    assert info.value.name == "MGPU_STATUS_DTYPE_MISMATCH" and info.value.message
    with pytest.raises(ValueError):  # shapes are checked before the call
        mk.gemm(a, a, torch.empty(64, 16, device=DEV), handle=h)


def test_prepared_call(h):
    a, b = randn(64, 64), randn(64, 64)
    c = torch.empty(64, 64, device=DEV)
    call = mk.gemm(a, b, c, prepare=True, handle=h)
    assert isinstance(call, mk.Call)
    c.fill_(float("nan"))
    call()
    assert rel_err(c, a.float() @ b.float()) < 1e-2


# --------------------------------------------------------- gather / scatter

@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32, torch.int64, torch.uint8])
def test_gather(h, dtype, index_dtype):
    table = torch.randint(-100, 100, (1000, 3, 40), device=DEV).to(dtype)
    index = torch.randint(0, 1000, (777,), device=DEV, dtype=index_dtype)
    out = torch.empty(777, 3, 40, device=DEV, dtype=dtype)
    mk.gather(table, index, out, handle=h)
    h.check_index_errors()
    assert torch.equal(out, table[index.long()])


def test_gather_out_of_range(h):
    table = torch.randn(50, 64, device=DEV)
    index = torch.tensor([0, 49, 50, -1, 7], device=DEV)
    out = torch.full((5, 64), 3.0, device=DEV)
    mk.gather(table, index, out, handle=h)
    with pytest.raises(mk.IndexOutOfRangeError) as info:
        h.check_index_errors()
    assert info.value.message
    assert torch.equal(out[[0, 1, 4]], table[[0, 49, 7]]) and (out[2:4] == 0).all()
    h.check_index_errors()  # cleared


def test_gather_padded_table_rows(h):
    wide = torch.randn(100, 96, device=DEV, dtype=torch.bfloat16)
    table = wide[:, 8:72]  # rows 64 long, 96 apart
    index = torch.randint(0, 100, (33,), device=DEV)
    out = torch.empty(33, 64, device=DEV, dtype=torch.bfloat16)
    mk.gather(table, index, out, handle=h)
    assert torch.equal(out, table[index])


@pytest.mark.parametrize("sorted_mode", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_scatter_add(h, dtype, sorted_mode):
    index = torch.randint(0, 20, (500,), device=DEV)
    if sorted_mode:
        index = index.sort().values
    src = randn(500, 64, dtype=dtype)
    dst = torch.zeros(20, 64, device=DEV, dtype=dtype)
    mk.scatter_add(src, index, dst, sorted=sorted_mode, handle=h)
    h.check_index_errors()
    ref = torch.zeros(20, 64, device=DEV).index_add_(0, index, src.float())
    assert rel_err(dst, ref) < (1e-5 if dtype == torch.float32 else 3e-2)  # bf16 atomics round at every add


# -------------------------------------------------------------- attention

def sdpa_reference(q, k, v, causal):
    """fp32 SDPA on (batch, seq, heads, dim) with GQA heads repeated; bottom-right causal mask."""
    groups = q.shape[2] // k.shape[2]
    qf, kf, vf = (x.float().transpose(1, 2) for x in (q, k, v))
    kf, vf = kf.repeat_interleave(groups, 1), vf.repeat_interleave(groups, 1)
    s = qf @ kf.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        sq, sk = q.shape[1], k.shape[1]
        i = torch.arange(sq, device=DEV)[:, None]
        j = torch.arange(sk, device=DEV)[None, :]
        s = s.masked_fill(j > i + (sk - sq), float("-inf"))
    lse = torch.logsumexp(s, -1)
    return (torch.softmax(s, -1) @ vf).transpose(1, 2), lse


@needs_hopper
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(2, 128, 128, 4, 4, 64), (1, 77, 200, 8, 2, 128), (3, 256, 256, 2, 1, 256)])
def test_attention_fwd(h, shape, causal):
    b, sq, sk, hq, hkv, d = shape
    q, k, v = randn(b, sq, hq, d), randn(b, sk, hkv, d), randn(b, sk, hkv, d)
    o = torch.full_like(q, float("nan"))
    lse = torch.empty(b, hq, sq, device=DEV)
    mk.attention_fwd(q, k, v, o, lse, causal=causal, handle=h)
    ref, ref_lse = sdpa_reference(q, k, v, causal)
    assert rel_err(o, ref) < 1e-2
    assert rel_err(lse, ref_lse) < 1e-4


@needs_hopper
def test_attention_fwd_varlen(h):
    lens = [5, 130, 64]
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), device=DEV, dtype=torch.int32)
    total, hq, d = sum(lens), 4, 64
    q, k, v = randn(total, hq, d), randn(total, hq, d), randn(total, hq, d)
    o = torch.empty_like(q)
    mk.attention_fwd(q, k, v, o, causal=True, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=max(lens),
                     max_seqlen_k=max(lens), handle=h)
    start = 0
    for n in lens:
        ref, _ = sdpa_reference(q[None, start:start + n], k[None, start:start + n], v[None, start:start + n], True)
        assert rel_err(o[start:start + n], ref[0]) < 1e-2
        start += n


@needs_serving_arch
@pytest.mark.parametrize("page", [16, 256])
def test_kv_cache_append_then_paged_decode(h, page):
    """A decode step: the new token's K/V appended into shuffled pages, then one query row per
    sequence attends over the grown cache (paged, seqused_k), against the contiguous reference."""
    b, hq, hkv, d, cap = 3, 16, 2, 128, 600
    old = [0, 300, 599]
    nb = (cap + page - 1) // page
    k_all, v_all = randn(b, cap, hkv, d), randn(b, cap, hkv, d)
    perm = torch.randperm(b * nb + 2, device=DEV)
    table = perm[:b * nb].view(b, nb).to(torch.int32)
    k_cache, v_cache = randn(b * nb + 2, page, hkv, d), randn(b * nb + 2, page, hkv, d)
    for s in range(b):
        for j in range(old[s]):
            k_cache[table[s, j // page], j % page] = k_all[s, j]
            v_cache[table[s, j // page], j % page] = v_all[s, j]
    k_new, v_new = k_all[:, :1].clone(), v_all[:, :1].clone()
    for s in range(b):  # the reference's new row sits at position old[s]
        k_all[s, old[s]], v_all[s, old[s]] = k_new[s, 0], v_new[s, 0]
    lens = torch.tensor(old, device=DEV, dtype=torch.int32)
    mk.kv_cache_append(k_new, v_new, k_cache, v_cache, lens, table, handle=h)
    q = randn(b, 1, hq, d)
    o = torch.full_like(q, float("nan"))
    lse = torch.empty(b, hq, 1, device=DEV)
    mk.attention_fwd(q, k_cache, v_cache, o, lse, causal=True, seqused_k=lens + 1, block_table=table,
                     max_seqlen_k=cap, handle=h)
    for s in range(b):
        n = old[s] + 1
        ref, ref_lse = sdpa_reference(q[s:s + 1], k_all[s:s + 1, :n], v_all[s:s + 1, :n], True)
        assert rel_err(o[s:s + 1], ref) < 1e-2
        assert rel_err(lse[s:s + 1], ref_lse) < 1e-4


# ---------------------------------------------------------- torch module

@needs_hopper
def test_torch_attention_autograd_and_ops():
    from mgpukernels.torch import attention
    q, k, v = (randn(2, 128, 4, 64).requires_grad_() for _ in range(3))
    o = attention(q, k, v, causal=True)
    ref, _ = sdpa_reference(q.detach(), k.detach(), v.detach(), True)
    assert rel_err(o.detach(), ref) < 1e-2
    assert o.requires_grad
    if not mk.attention_bwd_supported():
        with pytest.raises(NotImplementedError):
            o.sum().backward()
        return
    do = torch.randn_like(o)
    o.backward(do)
    qr, kr, vr = (x.detach().float().requires_grad_() for x in (q, k, v))
    r, _ = sdpa_reference(qr, kr, vr, True)
    r.backward(do.float())
    for got, want in ((q.grad, qr.grad), (k.grad, kr.grad), (v.grad, vr.grad)):
        assert rel_err(got, want) < 2e-2


@needs_hopper
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(2, 256, 4, 4), (1, 200, 4, 2)])  # (batch, seq, heads_q, heads_kv), GQA
def test_torch_attention_backward_against_sdpa(shape, causal):
    """dQ, dK, dV of mgpukernels.torch.attention (bf16, head dim 128) against the backward of
    scaled_dot_product_attention on the same inputs in fp32 (K, V heads repeated for GQA)."""
    if not mk.attention_bwd_supported():
        pytest.skip("the loaded library has no mgpu_attention_bwd")
    from mgpukernels.torch import attention
    b, s, hq, hkv = shape
    d = 128
    q = randn(b, s, hq, d).requires_grad_()
    k, v = (randn(b, s, hkv, d).requires_grad_() for _ in range(2))
    do = randn(b, s, hq, d)
    attention(q, k, v, causal=causal).backward(do)
    qr, kr, vr = (x.detach().float().requires_grad_() for x in (q, k, v))
    groups = hq // hkv
    ref = torch.nn.functional.scaled_dot_product_attention(
        qr.transpose(1, 2), kr.transpose(1, 2).repeat_interleave(groups, 1),
        vr.transpose(1, 2).repeat_interleave(groups, 1), is_causal=causal).transpose(1, 2)
    ref.backward(do.float())
    for name, got, want in (("dq", q.grad, qr.grad), ("dk", k.grad, kr.grad), ("dv", v.grad, vr.grad)):
        assert got.dtype == torch.bfloat16 and got.shape == want.shape
        assert rel_err(got, want) < 2e-2, name


@needs_hopper
def test_torch_compile_holds_the_custom_op():
    from mgpukernels.torch import attention

    def block(q, k, v):
        return attention(q, k, v, causal=True) * 2.0

    q, k, v = (randn(1, 64, 2, 64) for _ in range(3))
    compiled = torch.compile(block, fullgraph=True)
    assert rel_err(compiled(q, k, v), block(q, k, v)) < 1e-3
    torch.library.opcheck(torch.ops.mgpukernels.attention_fwd.default, (q, k, v, True, 0.0, -1, -1, 0.0),
                          test_utils=("test_schema", "test_faketensor"))


# --------------------------------------------------------- other frameworks

def test_cupy_arrays(h):
    cp = pytest.importorskip("cupy")
    table = cp.arange(1000 * 16, dtype=cp.float32).reshape(1000, 16)
    index = cp.asarray([3, 999, 0], dtype=cp.int64)
    out = cp.empty((3, 16), dtype=cp.float32)
    mk.gather(table, index, out, handle=h)
    h.check_index_errors()
    assert bool((out == table[index]).all())


def test_jax_arrays_through_dlpack(h):
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX has no GPU")
    a = jnp.asarray(torch.randn(64, 32).numpy(), dtype=jnp.bfloat16)
    b = jnp.asarray(torch.randn(32, 16).numpy(), dtype=jnp.bfloat16)
    c = torch.empty(64, 16, device=DEV)  # JAX arrays are immutable: the output is PyTorch's
    mk.gemm(a, b, c, handle=h)
    torch.cuda.synchronize()
    ref = torch.from_numpy(jax.device_get((a.astype(jnp.float32) @ b.astype(jnp.float32)))).to(DEV)
    assert rel_err(c, ref) < 1e-2
