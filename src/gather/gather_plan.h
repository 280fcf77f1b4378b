/*
 * The pure half of mgpu_gather and mgpu_scatter_add: descriptor validation,
 * variant selection and launch planning (kernel arguments and grid, by the
 * rules of kernels/abi/gather_abi.h). Nothing here touches a device, so
 * tests run it with made-up device capabilities; gather.c does the rest
 * (the handle's error word, encoding the map, launch).
 */
#ifndef MGPU_SRC_GATHER_SELECT_H
#define MGPU_SRC_GATHER_SELECT_H

#include <stdint.h>

#include "dispatch.h"
#include "gather_abi.h"

enum mgpu_gather_op { MGPU_GATHER_OP_GATHER, MGPU_GATHER_OP_SCATTER_ADD };

/* One gather or scatter_add call, in bytes, as the kernels see it. */
struct mgpu_gather_problem {
    enum mgpu_gather_op op;
    uintptr_t src, dst, index;   /* device addresses */
    int index_type;              /* mgpu_index_type */
    int64_t n_indices;
    int64_t table_rows;          /* gather: src rows; scatter_add: dst rows */
    int64_t row_bytes;
    int64_t src_stride, dst_stride;
    int elem_size;
    int dtype;                   /* scatter_add: mgpu_dtype; gather: -1 */
    int sorted;                  /* scatter_add in MGPU_SCATTER_SORTED mode */
};

/* SUCCESS and *out filled when the descriptor is valid, else the status with
 * its message set. A valid problem may still be empty (n_indices == 0 or
 * row_bytes == 0): mgpu_gather_problem_empty() says so; an empty call is
 * valid whatever its strides and pointers. */
mgpu_status mgpu_gather_validate(const mgpu_gather_desc *desc, struct mgpu_gather_problem *out);
mgpu_status mgpu_scatter_add_validate(const mgpu_scatter_add_desc *desc, struct mgpu_gather_problem *out);
int mgpu_gather_problem_empty(const struct mgpu_gather_problem *p);

/* 1 when src, dst, both strides and the row length are multiples of 16 bytes. */
int mgpu_gather_vec16(const struct mgpu_gather_problem *p);

/* Picks the variant for a valid, non-empty problem. `force` (may be NULL)
 * names a variant as MGPU_FORCE_VARIANT does; a name that is not a gather /
 * scatter variant of this device is ignored (it is meant for another
 * operation). Returns the index into mgpu_variants, or -1 with *status set to
 * ARCH_MISMATCH or NOT_SUPPORTED. */
int mgpu_select_gather(const struct mgpu_gather_problem *p, const struct mgpu_device_caps *caps,
                       const char *force, mgpu_status *status);

/* Everything a launch needs: the arguments (with the error word's address),
 * the grid, and for gather4 the tensor map to encode over the source table,
 * its element size and box. */
struct mgpu_gather_plan {
    mgpu_gather_args args;
    unsigned grid;
    int map_elem_bytes; /* gather4 only */
    int box_bytes;      /* gather4 only */
    struct mgpu_tensor_map_desc table_map; /* gather4 only */
};

void mgpu_gather_make_plan(const struct mgpu_gather_problem *p, const struct mgpu_variant *v,
                           const struct mgpu_device_caps *caps, uint64_t error_word, struct mgpu_gather_plan *out);

#endif
