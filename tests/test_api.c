/*
 * The public API through the shared library, on any machine: names of every
 * status, the version, NULL handles, and a clear status (never a crash) when
 * there is no driver or no device.
 */
#include <string.h>

#include "check.h"
#include "mgpukernels.h"

int main(void)
{
    CHECK(mgpu_version() == MGPU_VERSION_NUMBER, "version %d", mgpu_version());
    for (int s = MGPU_STATUS_SUCCESS; s <= MGPU_STATUS_INSUFFICIENT_WORKSPACE; s++) {
        const char *name = mgpu_status_string((mgpu_status)s);
        CHECK(name && strncmp(name, "MGPU_STATUS_", 12) == 0 && !strstr(name, "unknown"), "status %d: %s", s,
              name);
    }
    CHECK(strstr(mgpu_status_string((mgpu_status)999), "unknown") != NULL, "out-of-range status name");

    float one = 1.0f, zero = 0.0f;
    CHECK_STATUS(mgpu_gemm(NULL, MGPU_OP_N, MGPU_OP_N, 4, 4, 4, &one, (void *)16, MGPU_DTYPE_F16, 4, (void *)16,
                           MGPU_DTYPE_F16, 4, &zero, (void *)16, MGPU_DTYPE_F16, 4),
                 MGPU_STATUS_INVALID_HANDLE);
    CHECK(strlen(mgpu_last_error_message()) > 0, "no message");
    CHECK_STATUS(mgpu_gemm_strided_batched(NULL, MGPU_OP_N, MGPU_OP_N, 4, 4, 4, &one, (void *)16, MGPU_DTYPE_F16,
                                           4, 16, (void *)16, MGPU_DTYPE_F16, 4, 16, &zero, (void *)16,
                                           MGPU_DTYPE_F16, 4, 16, 2),
                 MGPU_STATUS_INVALID_HANDLE);
    CHECK_STATUS(mgpu_set_stream(NULL, NULL), MGPU_STATUS_INVALID_HANDLE);
    void *stream;
    CHECK_STATUS(mgpu_get_stream(NULL, &stream), MGPU_STATUS_INVALID_HANDLE);
    CHECK_STATUS(mgpu_destroy(NULL), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(mgpu_create(NULL), MGPU_STATUS_NULL_POINTER);

    mgpu_handle *h = (mgpu_handle *)1;
    mgpu_status s = mgpu_create(&h);
    if (s == MGPU_STATUS_SUCCESS) {
        CHECK(h != NULL, "handle is NULL on success");
        CHECK_STATUS(mgpu_get_stream(h, NULL), MGPU_STATUS_NULL_POINTER);
        CHECK_STATUS(mgpu_get_stream(h, &stream), MGPU_STATUS_SUCCESS);
        CHECK(stream == NULL, "default stream is not NULL");
        CHECK_STATUS(mgpu_destroy(h), MGPU_STATUS_SUCCESS);
    } else {
        CHECK(s == MGPU_STATUS_NO_DRIVER || s == MGPU_STATUS_NO_DEVICE, "create without a GPU: %s (%s)",
              mgpu_status_string(s), mgpu_last_error_message());
        CHECK(h == NULL, "handle not cleared on failure");
        CHECK(strlen(mgpu_last_error_message()) > 0, "no message");
        printf("no usable GPU here: %s: %s\n", mgpu_status_string(s), mgpu_last_error_message());
    }
    return check_exit();
}
