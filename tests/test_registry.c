/*
 * The generated registry agrees with itself and with the embedded images:
 * unique entry names with the mgpu_ prefix, valid image indices, launch
 * shapes inside the hardware limits, and every entry name present in the
 * cubin that is supposed to hold it.
 */
#include <string.h>

#include "check.h"
#include "registry.h"

#define MAX_SMEM_PER_BLOCK (227 * 1024)

int main(void)
{
    CHECK(mgpu_variant_count > 0, "empty registry");
    CHECK(mgpu_image_count > 0, "no images");
    for (int i = 0; i < mgpu_image_count; i++) {
        CHECK(mgpu_images[i].size > 0 && mgpu_images[i].data, "image %d is empty", i);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(mgpu_images[i].name, mgpu_images[j].name) != 0, "image name %s twice",
                  mgpu_images[i].name);
    }
    for (int i = 0; i < mgpu_variant_count; i++) {
        const struct mgpu_variant *v = &mgpu_variants[i];
        CHECK(strncmp(v->name, "mgpu_", 5) == 0, "%s lacks the mgpu_ prefix", v->name);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(v->name, mgpu_variants[j].name) != 0, "entry %s twice", v->name);
        CHECK(v->image >= 0 && v->image < mgpu_image_count, "%s: image %d out of range", v->name, v->image);
        CHECK(v->threads > 0 && v->threads <= 1024 && v->threads % 32 == 0, "%s: %d threads", v->name,
              v->threads);
        CHECK(v->smem_bytes >= 0 && v->smem_bytes <= MAX_SMEM_PER_BLOCK, "%s: %d bytes of smem", v->name,
              v->smem_bytes);
        CHECK(v->kind >= 0 && v->kind < MGPU_KIND_COUNT, "%s: kind %d", v->name, (int)v->kind);
        CHECK(v->cluster >= 1 && v->cluster <= 2, "%s: clusters of %d CTAs", v->name, v->cluster);
        switch (v->family) { /* each family fills its own typed fields */
        case MGPU_FAMILY_GEMM:
            CHECK(v->gemm.tile_m > 0 && v->gemm.tile_n > 0 && v->gemm.tile_k > 0 && v->gemm.stages > 0,
                  "%s: bad tile", v->name);
            CHECK(v->cluster == v->gemm.cluster_m * v->gemm.cluster_n, "%s: cluster %d", v->name, v->cluster);
            CHECK((v->kind == MGPU_KIND_GEMM_PORTABLE) == (v->gemm.shape_class == MGPU_GEMM_ANY_SHAPE),
                  "%s: shape class %d (only the portable kernel serves every shape)", v->name,
                  (int)v->gemm.shape_class);
            break;
        case MGPU_FAMILY_ATTENTION:
            CHECK(v->attention.head_dim > 0 && v->attention.block_m > 0 && v->attention.block_n > 0 &&
                      v->attention.stages > 0,
                  "%s: bad attention tile", v->name);
            break;
        case MGPU_FAMILY_GATHER:
            CHECK(v->gather.index_type == 0 || v->gather.index_type == 1, "%s: index type %d", v->name,
                  v->gather.index_type);
            break;
        case MGPU_FAMILY_HELPER:
            CHECK(v->helper.per_thread > 0, "%s: %d elements per thread", v->name, v->helper.per_thread);
            break;
        default:
            CHECK(0, "%s: family %d", v->name, (int)v->family);
        }
        CHECK((v->cc_major == 9 && v->cc_minor == 0) || (v->cc_major == 10 && v->cc_minor == 0),
              "%s: unexpected compute capability %d.%d", v->name, v->cc_major, v->cc_minor);
        if (v->kind == MGPU_KIND_GEMM_SM90_PERSISTENT)
            CHECK(v->cc_major == 9 && strstr(v->name, "sm90"), "%s: sm90 kind on cc %d", v->name, v->cc_major);
        if (v->kind == MGPU_KIND_GEMM_SM100_PERSISTENT)
            CHECK(v->cc_major == 10 && strstr(v->name, "sm100"), "%s: sm100 kind on cc %d", v->name,
                  v->cc_major);
        if (v->image >= 0 && v->image < mgpu_image_count) {
            const struct mgpu_image *img = &mgpu_images[v->image];
            CHECK(memmem(img->data, img->size, v->name, strlen(v->name) + 1) != NULL,
                  "%s is not in image %s", v->name, img->name);
        }
    }
    return check_exit();
}
