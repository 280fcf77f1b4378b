"""libmgpukernels from Python: GEMM, gather / scatter-add and flash attention on any
device array (PyTorch, CuPy, JAX, ...: __cuda_array_interface__ or DLPack).

    import mgpukernels as mk
    mk.gemm(a, b, c)                 # c = a @ b, row-major arrays as frameworks hold them
    mk.gather(table, ids, out)       # out[i] = table[ids[i]]
    mk.check_index_errors()          # raises IndexOutOfRangeError for a bad id

The C library is loaded on first use: $MGPU_LIBRARY when set, else the
installed libmgpukernels.so.0. Failures raise MgpuError subclasses carrying
the library's message. With PyTorch, mgpukernels.torch adds autograd and
torch.library operators (import it explicitly).
"""
from ._capi import library
from .errors import (ArchMismatchError, DeviceUnavailableError, DriverError, DtypeError,
                     IndexOutOfRangeError, InsufficientWorkspaceError, InternalError, InvalidArgumentError,
                     LaunchError, LibraryNotFoundError, MgpuError, NoDeviceError, NoDriverError,
                     NotSupportedError, OutOfMemoryError, WrongDeviceError)
from .ops import (Call, Handle, attention_bwd, attention_bwd_supported,
                  attention_bwd_workspace_size, attention_fwd, check_index_errors,
                  default_handle, gather, gemm, gemm_ex, gemm_workspace_size, kv_cache_append, scatter_add)

__version__ = "0.1.0"


def library_version():
    """The loaded C library's version, "MAJOR.MINOR.PATCH"."""
    return library().version_string


__all__ = [
    "Handle", "Call", "default_handle", "library", "library_version",
    "gemm", "gemm_ex", "gemm_workspace_size", "gather", "scatter_add", "check_index_errors",
    "attention_fwd", "attention_bwd", "attention_bwd_supported", "attention_bwd_workspace_size",
    "kv_cache_append",
    "MgpuError", "LibraryNotFoundError", "InvalidArgumentError", "DtypeError", "WrongDeviceError",
    "DeviceUnavailableError", "NoDriverError", "NoDeviceError", "NotSupportedError", "ArchMismatchError",
    "DriverError", "LaunchError", "OutOfMemoryError", "IndexOutOfRangeError", "InsufficientWorkspaceError",
    "InternalError",
]
