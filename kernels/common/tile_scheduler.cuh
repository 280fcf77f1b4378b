/*
 * Tile scheduler of the persistent GEMM kernels: which output tile (and which
 * slice of K) each work unit is, and which units each CTA takes.
 *
 * A work unit is one tile_m x tile_n tile of D, of one batch, over one of
 * `splits` slices of K (splits == 1 without split-K). The grid is at most one
 * CTA (or one cluster) per SM; CTA c takes units c, c + grid, c + 2 grid, ...
 * (static round-robin), so the producer and the consumers of a CTA walk the
 * same sequence without talking to each other, and any grid size is correct.
 * With clusters of cluster_m x cluster_n CTAs (launched along grid x), a unit
 * is a cluster tile of cluster_m x cluster_n tiles; CTA rank r of the cluster
 * takes tile (r % cluster_m, r / cluster_m) of it. At the M and N edges some
 * of those tiles may lie outside D: their CTAs still run the (zero-filled)
 * pipeline with their peers and store nothing.
 *
 * Order of the units ("grouped" or "planar snake"): per batch and K slice,
 * the (cluster) tile rows are cut into bands of `band` rows; a band is walked
 * column by column, each column top to bottom, and odd bands walk the columns
 * right to left. The units running at one moment then cover a band x ~grid/band
 * block of tiles, so they share A rows and B columns in L2, and the turn at
 * the end of a band reuses the B columns just read.
 */
#pragma once

#include <stdint.h>

namespace mgpu {

struct GemmTile {
    int m_tile, n_tile; /* in tiles (not cluster tiles) */
    int batch, split;
};

struct GemmTileScheduler {
    int rows, cols;  /* cluster tiles along M and along N */
    int band, cluster_m, cluster_n, splits;
    int64_t per_split, per_batch, total;

    __device__ GemmTileScheduler(int m, int n, int batch, int tile_m, int tile_n, int cluster_m_, int cluster_n_,
                                 int band_, int splits_)
    {
        const int tiles_m = (m + tile_m - 1) / tile_m, tiles_n = (n + tile_n - 1) / tile_n;
        cluster_m = cluster_m_;
        cluster_n = cluster_n_;
        rows = (tiles_m + cluster_m - 1) / cluster_m;
        cols = (tiles_n + cluster_n - 1) / cluster_n;
        band = band_ > 0 ? band_ : 1;
        splits = splits_ > 0 ? splits_ : 1;
        per_split = static_cast<int64_t>(rows) * cols;
        per_batch = per_split * splits;
        total = per_batch * batch;
    }

    /* The unit this CTA's cluster starts with, and the step between its units. */
    __device__ int64_t first() const { return blockIdx.x / (cluster_m * cluster_n); }
    __device__ int64_t stride() const { return gridDim.x / (cluster_m * cluster_n); }

    __device__ GemmTile tile(int64_t unit) const
    {
        GemmTile t;
        t.batch = static_cast<int>(unit / per_batch);
        const int64_t in_batch = unit - t.batch * per_batch;
        t.split = static_cast<int>(in_batch / per_split);
        const int64_t idx = in_batch - t.split * per_split;

        const int64_t band_units = static_cast<int64_t>(band) * cols;
        const int b = static_cast<int>(idx / band_units);
        const int in_band = static_cast<int>(idx - b * band_units);
        const int band_rows = min(band, rows - b * band); /* the last band may be narrower */
        int col = in_band / band_rows;
        const int row = b * band + in_band % band_rows;
        if (b & 1)
            col = cols - 1 - col;
        const int rank = static_cast<int>(blockIdx.x % (cluster_m * cluster_n));
        t.m_tile = row * cluster_m + rank % cluster_m;
        t.n_tile = col * cluster_n + rank / cluster_m;
        return t;
    }

    /* The k-tiles [begin, end) of K slice `split` of num_k_tiles: an even cut,
     * never empty while splits <= num_k_tiles (the runtime guarantees it). */
    __device__ void k_range(int num_k_tiles, int split, int &begin, int &end) const
    {
        begin = static_cast<int>(static_cast<int64_t>(num_k_tiles) * split / splits);
        end = static_cast<int>(static_cast<int64_t>(num_k_tiles) * (split + 1) / splits);
    }
};

} // namespace mgpu
