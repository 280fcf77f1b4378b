/*
 * A libcuda.so.1 that is no usable driver is named as such: run against the
 * fake driver with FAKE_CUDA_MODE=stub (cuInit answers
 * CUDA_ERROR_STUB_LIBRARY, as the CUDA toolkit's stub library does) or
 * FAKE_CUDA_MODE=missing (an entry point cannot be resolved), mgpu_create
 * returns NO_DRIVER with a message that says "stub" and where the library
 * was found.
 */
#include <string.h>

#include "check.h"
#include "mgpukernels.h"

int main(void)
{
    mgpu_handle *h = (mgpu_handle *)1;
    CHECK_STATUS(mgpu_create(&h), MGPU_STATUS_NO_DRIVER);
    const char *message = mgpu_last_error_message();
    CHECK(h == NULL, "handle not cleared");
    CHECK(strstr(message, "stub") != NULL && strstr(message, "libcuda.so.1") != NULL,
          "the message does not name a stub library and its path: %s", message);
    printf("%s\n", message);
    return check_exit();
}
