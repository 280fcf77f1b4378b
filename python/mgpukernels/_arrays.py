"""Device arrays of any framework, described for the C API.

describe(x) returns an Array: device address, shape, strides in elements,
dtype name and element size. It accepts, in this order:
  - PyTorch tensors (read directly: also bfloat16 and float8, which
    __cuda_array_interface__ cannot express);
  - objects with __cuda_array_interface__ (CuPy, Numba, PyTorch, ...);
  - objects with __dlpack__ on a CUDA device (JAX, CuPy, PyTorch, ...).
Nothing is copied and no framework is imported. The caller keeps x alive
while the library uses its memory (the functions of this package hold a
reference for the duration of the call).
"""
import ctypes
import math
import sys
from typing import NamedTuple, Tuple


class Array(NamedTuple):
    ptr: int
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]  # elements
    dtype: str                # 'float16', 'bfloat16', 'float32', 'int32', 'float8_e4m3fn', ...
    itemsize: int
    device: int               # CUDA device ordinal, -1 when unknown


# __cuda_array_interface__ typestr (kind + bytes) -> dtype name
_TYPESTR = {"f2": "float16", "f4": "float32", "f8": "float64", "i1": "int8", "i2": "int16", "i4": "int32",
            "i8": "int64", "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64", "b1": "bool"}
# DLPack (type code, bits) -> dtype name
_DLPACK = {(0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64",
           (1, 8): "uint8", (1, 16): "uint16", (1, 32): "uint32", (1, 64): "uint64",
           (2, 16): "float16", (2, 32): "float32", (2, 64): "float64", (4, 16): "bfloat16", (6, 8): "bool",
           (10, 8): "float8_e4m3fn", (12, 8): "float8_e5m2"}
_DL_CUDA, _DL_CUDA_MANAGED = 2, 13


def _torch_describe(x):
    if x.device.type != "cuda":
        raise ValueError(f"tensor on {x.device}; libmgpukernels needs CUDA device memory")
    return Array(x.data_ptr(), tuple(x.shape), tuple(x.stride()), str(x.dtype).replace("torch.", ""),
                 x.element_size(), x.device.index if x.device.index is not None else -1)


def _cai_describe(x):
    cai = x.__cuda_array_interface__
    typestr = cai["typestr"]
    dtype = _TYPESTR.get(typestr[1:])
    if dtype is None:
        raise TypeError(f"__cuda_array_interface__ typestr {typestr!r} is not supported")
    itemsize = int(typestr[2:])
    shape = tuple(cai["shape"])
    if cai.get("strides") is None:
        strides, step = [], 1
        for n in reversed(shape):
            strides.append(step)
            step *= max(n, 1)
        strides = tuple(reversed(strides))
    else:
        if any(s % itemsize for s in cai["strides"]):
            raise ValueError("strides that are not multiples of the element size are not supported")
        strides = tuple(s // itemsize for s in cai["strides"])
    return Array(int(cai["data"][0] or 0), shape, strides, dtype, itemsize, -1)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get_pointer.restype = ctypes.c_void_p
_capsule_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _dlpack_describe(x, stream):
    """Reads the DLTensor of an unversioned "dltensor" capsule without consuming it: the
    capsule (and so the producer's tensor) is released normally once dropped."""
    device_type, device_id = x.__dlpack_device__()
    if device_type not in (_DL_CUDA, _DL_CUDA_MANAGED):
        raise ValueError(f"DLPack device type {device_type}: libmgpukernels needs CUDA device memory")
    try:
        capsule = x.__dlpack__(stream=stream)
    except TypeError:
        capsule = x.__dlpack__()
    t = _DLTensor.from_address(_capsule_get_pointer(capsule, b"dltensor"))
    dtype = _DLPACK.get((t.dtype.code, t.dtype.bits))
    if dtype is None or t.dtype.lanes != 1:
        raise TypeError(f"DLPack dtype (code {t.dtype.code}, bits {t.dtype.bits}) is not supported")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if t.strides:
        strides = tuple(t.strides[i] for i in range(t.ndim))
    else:
        strides = tuple(math.prod(shape[i + 1:]) for i in range(t.ndim))
    return Array((t.data or 0) + t.byte_offset, shape, strides, dtype, t.dtype.bits // 8, device_id)


def describe(x, stream=None):
    """The Array of x. stream: the consumer stream for DLPack producers (int; None: legacy default)."""
    if isinstance(x, Array):
        return x
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return _torch_describe(x)
    if hasattr(x, "__cuda_array_interface__"):
        return _cai_describe(x)
    if hasattr(x, "__dlpack__"):
        return _dlpack_describe(x, 1 if not stream else stream)
    raise TypeError(f"{type(x).__name__} is not a device array (no __cuda_array_interface__ or __dlpack__)")
