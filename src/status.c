/*
 * Status names, the per-thread error message, and the MGPU_LOG switch.
 * Every failing path in the library ends in mgpu_fail(), so that the status
 * it returns and the message a user reads are set in one place.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char last_message[512];

const char *mgpu_status_string(mgpu_status status)
{
    switch (status) {
    case MGPU_STATUS_SUCCESS: return "MGPU_STATUS_SUCCESS";
    case MGPU_STATUS_INVALID_HANDLE: return "MGPU_STATUS_INVALID_HANDLE";
    case MGPU_STATUS_NULL_POINTER: return "MGPU_STATUS_NULL_POINTER";
    case MGPU_STATUS_INVALID_SIZE: return "MGPU_STATUS_INVALID_SIZE";
    case MGPU_STATUS_INVALID_LD: return "MGPU_STATUS_INVALID_LD";
    case MGPU_STATUS_INVALID_VALUE: return "MGPU_STATUS_INVALID_VALUE";
    case MGPU_STATUS_UNSUPPORTED_DTYPE: return "MGPU_STATUS_UNSUPPORTED_DTYPE";
    case MGPU_STATUS_DTYPE_MISMATCH: return "MGPU_STATUS_DTYPE_MISMATCH";
    case MGPU_STATUS_WRONG_DEVICE: return "MGPU_STATUS_WRONG_DEVICE";
    case MGPU_STATUS_NO_DRIVER: return "MGPU_STATUS_NO_DRIVER";
    case MGPU_STATUS_NO_DEVICE: return "MGPU_STATUS_NO_DEVICE";
    case MGPU_STATUS_ARCH_MISMATCH: return "MGPU_STATUS_ARCH_MISMATCH";
    case MGPU_STATUS_DRIVER_ERROR: return "MGPU_STATUS_DRIVER_ERROR";
    case MGPU_STATUS_OUT_OF_MEMORY: return "MGPU_STATUS_OUT_OF_MEMORY";
    case MGPU_STATUS_LAUNCH_FAILED: return "MGPU_STATUS_LAUNCH_FAILED";
    case MGPU_STATUS_NOT_SUPPORTED: return "MGPU_STATUS_NOT_SUPPORTED";
    case MGPU_STATUS_INDEX_OUT_OF_RANGE: return "MGPU_STATUS_INDEX_OUT_OF_RANGE";
    case MGPU_STATUS_INTERNAL_ERROR: return "MGPU_STATUS_INTERNAL_ERROR";
    case MGPU_STATUS_INSUFFICIENT_WORKSPACE: return "MGPU_STATUS_INSUFFICIENT_WORKSPACE";
    }
    return "MGPU_STATUS_<unknown>";
}

const char *mgpu_last_error_message(void)
{
    return last_message;
}

mgpu_status mgpu_fail(mgpu_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_message, sizeof last_message, fmt, ap);
    va_end(ap);
    return status;
}

int mgpu_log_enabled(void)
{
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *env = getenv("MGPU_LOG");
        v = env && env[0] && strcmp(env, "0") != 0;
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
}

void mgpu_log(const char *fmt, ...)
{
    if (!mgpu_log_enabled())
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("mgpu: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int mgpu_version(void)
{
    return MGPU_VERSION_NUMBER;
}
