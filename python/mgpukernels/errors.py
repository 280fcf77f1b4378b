"""Exceptions for libmgpukernels statuses.

Every failing call raises an MgpuError subclass carrying the status number,
its name (mgpu_status_string) and the library's message for this thread
(mgpu_last_error_message), which says what exactly was wrong. Subclasses also
derive from the matching Python built-in (ValueError, TypeError, MemoryError,
IndexError, NotImplementedError), so ordinary handlers catch them.
"""


class MgpuError(RuntimeError):
    """A libmgpukernels call returned a status other than SUCCESS."""

    def __init__(self, status, name, message, call=None):
        self.status = status
        self.name = name
        self.message = message
        self.call = call
        where = f"{call}: " if call else ""
        super().__init__(f"{where}{name}: {message}" if message else f"{where}{name}")


class LibraryNotFoundError(OSError):
    """libmgpukernels.so.0 could not be loaded (see MGPU_LIBRARY)."""


class InvalidArgumentError(MgpuError, ValueError):
    """INVALID_HANDLE, NULL_POINTER, INVALID_SIZE, INVALID_LD or INVALID_VALUE."""


class DtypeError(MgpuError, TypeError):
    """UNSUPPORTED_DTYPE or DTYPE_MISMATCH."""


class WrongDeviceError(MgpuError):
    """The current context's device is not the handle's (WRONG_DEVICE)."""


class DeviceUnavailableError(MgpuError):
    """No usable driver or device: the base of NoDriverError and NoDeviceError."""


class NoDriverError(DeviceUnavailableError):
    """libcuda.so.1 is missing or too old (NO_DRIVER)."""


class NoDeviceError(DeviceUnavailableError):
    """The driver sees no CUDA device (NO_DEVICE)."""


class NotSupportedError(MgpuError, NotImplementedError):
    """Valid arguments this build or device has no kernel for (NOT_SUPPORTED)."""


class ArchMismatchError(NotSupportedError):
    """No kernel in this build for this device's architecture (ARCH_MISMATCH)."""


class DriverError(MgpuError):
    """A CUDA driver call failed (DRIVER_ERROR); the message names it."""


class LaunchError(MgpuError):
    """The driver refused a kernel launch (LAUNCH_FAILED)."""


class OutOfMemoryError(MgpuError, MemoryError):
    """A host or device allocation failed (OUT_OF_MEMORY)."""


class IndexOutOfRangeError(MgpuError, IndexError):
    """A gather / scatter-add index was outside the table (INDEX_OUT_OF_RANGE)."""


class InsufficientWorkspaceError(MgpuError):
    """The handle's workspace is smaller than the call needs (INSUFFICIENT_WORKSPACE)."""


class InternalError(MgpuError):
    """A bug in the library (INTERNAL_ERROR); please report it."""


# Status numbers of include/mgpukernels.h -> exception class.
STATUS_EXCEPTIONS = {
    1: InvalidArgumentError,  # INVALID_HANDLE
    2: InvalidArgumentError,  # NULL_POINTER
    3: InvalidArgumentError,  # INVALID_SIZE
    4: InvalidArgumentError,  # INVALID_LD
    5: InvalidArgumentError,  # INVALID_VALUE
    6: DtypeError,            # UNSUPPORTED_DTYPE
    7: DtypeError,            # DTYPE_MISMATCH
    8: WrongDeviceError,
    9: NoDriverError,
    10: NoDeviceError,
    11: ArchMismatchError,
    12: DriverError,
    13: OutOfMemoryError,
    14: LaunchError,
    15: NotSupportedError,
    16: IndexOutOfRangeError,
    17: InternalError,
    18: InsufficientWorkspaceError,
}


def exception_for(status, name, message, call=None):
    """The exception instance for a failing status (MgpuError for unknown numbers)."""
    return STATUS_EXCEPTIONS.get(status, MgpuError)(status, name, message, call)
