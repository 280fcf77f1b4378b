/*
 * Encodes the TMA tensor maps the attention kernels read (forward: Q, K, V;
 * backward: Q, K, V, dO) from the shapes the pure planners computed.
 */
#ifndef MGPU_SRC_ATTENTION_MAPS_H
#define MGPU_SRC_ATTENTION_MAPS_H

#include "internal.h"
#include "attention/attention_common.h"

/* cuTensorMapEncodeTiled of one rank-4 16-bit map with 128-byte swizzle and
 * zero fill; DRIVER_ERROR naming `what` when the driver refuses it. */
mgpu_status mgpu_attention_encode_map(const struct mgpu_driver *d, int dtype, const struct mgpu_attention_map_shape *m,
                                      const char *what, CUtensorMap *out);

#endif
