"""PyTorch integration: attention as a differentiable function and as torch.library operators.

    from mgpukernels.torch import attention
    o = attention(q, k, v, causal=True)          # q: (batch, seq, heads, head_dim), fp16/bf16, CUDA

torch.ops.mgpukernels.attention_fwd / attention_bwd are custom operators
(torch.library.custom_op, with fake implementations for shapes), so
torch.compile graphs hold them without breaking; AttentionFunction is the
torch.autograd.Function over them. The backward runs mgpu_attention_bwd,
first giving the handle the workspace mgpu_attention_bwd_workspace_size asks
for (a library without mgpu_attention_bwd raises NotImplementedError).

Calls run on the current PyTorch stream of the tensors' device, each
(thread, device, stream) with its own library handle, created on first use.
Handle creation and the backward's workspace reservation allocate device
memory: make one call of each shape before capturing a CUDA graph.
"""
import threading

import torch

from . import ops

_local = threading.local()


def handle_for(device):
    """The library handle of this thread for `device` (a torch.device or ordinal), on its current stream."""
    index = device.index if isinstance(device, torch.device) else device
    if index is None:
        index = torch.cuda.current_device()
    stream = torch.cuda.current_stream(index).cuda_stream
    handles = getattr(_local, "handles", None)
    if handles is None:
        handles = _local.handles = {}
    h = handles.get((index, stream))
    if h is None:
        with torch.cuda.device(index):
            torch.cuda.init()
            h = handles[(index, stream)] = ops.Handle(stream=stream)
    return h


def _lse_shape(q, varlen):
    return (q.shape[1], q.shape[0]) if varlen else (q.shape[0], q.shape[2], q.shape[1])


@torch.library.custom_op("mgpukernels::attention_fwd", mutates_args=())
def attention_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                  softmax_scale: float = 0.0, window_left: int = -1, window_right: int = -1,
                  softcap: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """(out, lse) of flash attention over (batch, seq, heads, head_dim) tensors."""
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty(_lse_shape(q, False), dtype=torch.float32, device=q.device)
    ops.attention_fwd(q, k, v, out, lse, causal=causal, softmax_scale=softmax_scale,
                      window=(window_left, window_right), softcap=softcap, handle=handle_for(q.device))
    return out, lse


@attention_fwd.register_fake
def _(q, k, v, causal=False, softmax_scale=0.0, window_left=-1, window_right=-1, softcap=0.0):
    return q.new_empty(q.shape), q.new_empty(_lse_shape(q, False), dtype=torch.float32)


@torch.library.custom_op("mgpukernels::attention_bwd", mutates_args=())
def attention_bwd(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
                  lse: torch.Tensor, causal: bool = False, softmax_scale: float = 0.0, window_left: int = -1,
                  window_right: int = -1, softcap: float = 0.0,
                  deterministic: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dq, dk, dv) of attention_fwd (mgpu_attention_bwd); NotImplementedError when the loaded library
    has no mgpu_attention_bwd."""
    if not ops.attention_bwd_supported():
        raise NotImplementedError("attention backward: the loaded libmgpukernels has no mgpu_attention_bwd")
    h = handle_for(q.device)
    dout = dout.contiguous()
    dq, dk, dv = (torch.empty(x.shape, dtype=x.dtype, device=x.device) for x in (q, k, v))
    # ops.attention_bwd asks mgpu_attention_bwd_workspace_size for the scratch this call needs and
    # reserves it on the handle (synchronous, grows only) before running mgpu_attention_bwd.
    ops.attention_bwd(q, k, v, out, dout, lse, dq, dk, dv, causal=causal, softmax_scale=softmax_scale,
                      window=(window_left, window_right), softcap=softcap, deterministic=deterministic, handle=h)
    return dq, dk, dv


@attention_bwd.register_fake
def _(dout, q, k, v, out, lse, causal=False, softmax_scale=0.0, window_left=-1, window_right=-1, softcap=0.0,
      deterministic=False):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


class AttentionFunction(torch.autograd.Function):
    """Flash attention with autograd: forward through mgpukernels::attention_fwd, backward through
    mgpukernels::attention_bwd (mgpu_attention_bwd on the saved q, k, v, out and lse)."""

    @staticmethod
    def forward(ctx, q, k, v, causal, softmax_scale, window_left, window_right, softcap, deterministic):
        out, lse = torch.ops.mgpukernels.attention_fwd(q, k, v, causal, softmax_scale, window_left, window_right,
                                                       softcap)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.args = (causal, softmax_scale, window_left, window_right, softcap, deterministic)
        ctx.mark_non_differentiable(lse)
        return out, lse

    @staticmethod
    def backward(ctx, dout, _dlse):
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = torch.ops.mgpukernels.attention_bwd(dout, q, k, v, out, lse, *ctx.args)
        return dq, dk, dv, None, None, None, None, None, None


def attention(q, k, v, *, causal=False, softmax_scale=None, window=(-1, -1), softcap=0.0, deterministic=False,
              return_lse=False):
    """Flash attention on (batch, seq, heads, head_dim) CUDA tensors (fp16 / bf16; k and v may have
    fewer heads: GQA). Differentiable; torch.compile keeps it as one operator each way."""
    out, lse = AttentionFunction.apply(q, k, v, bool(causal), float(softmax_scale or 0.0), int(window[0]),
                                       int(window[1]), float(softcap), bool(deterministic))
    return (out, lse) if return_lse else out
