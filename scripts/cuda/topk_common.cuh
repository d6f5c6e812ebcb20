// Shared by the CUDA probe kernels (topk_row_cta.cu, cluster_floor.cu): the key contract and the final ranking.
//
// Key contract (DESIGN section 2): key = ordered(score) << 32 | (0xFFFFFFFF - column), compared as unsigned 64-bit
// (the package's signed key with the high word offset by 2^31: the same order); every NaN ranks above +inf; -inf
// is not a candidate (ordered(-inf) == NEG_INF_U, and every candidate's ordered value is above it).
#pragma once
#include <stdint.h>

#define NEG_INF_U 0x007FFFFFu  // ordered(-inf)

__device__ __forceinline__ uint32_t ordered_u(float x) {
    const uint32_t b = __float_as_uint(x);
    // monotone map of float order to unsigned order: flip every bit of a negative, only the sign of a positive
    const uint32_t u = b ^ ((uint32_t)((int32_t)b >> 31) | 0x80000000u);
    return x != x ? 0xFFFFFFFFu : u;  // every NaN: above +inf
}

__device__ __forceinline__ uint64_t make_key(uint32_t u, uint32_t col) {
    return ((uint64_t)u << 32) | (uint64_t)(0xFFFFFFFFu - col);
}

__device__ __forceinline__ int key_column(uint64_t key) { return (int)(0xFFFFFFFFu - (uint32_t)key); }

// Called by every thread of the CTA.  s[0..M) holds M unique keys, among them the row's kk best.  Each key s[c],
// lo <= c < hi, gets its rank, the number of keys above it (M broadcast reads of shared memory per key, no sort, no
// barrier), and the key of rank r < kk writes its column to o[r].  Cost grows with M: callers use it for small M.
__device__ __forceinline__ void rank_range(const uint64_t* s, int M, int lo, int hi, int kk, int* o) {
    for (int c = lo + (int)threadIdx.x; c < hi; c += blockDim.x) {
        const uint64_t mine = s[c];
        int r = 0;
#pragma unroll 8
        for (int i = 0; i < M; ++i) r += s[i] > mine;
        if (r < kk) o[r] = key_column(mine);
    }
}

// rank_range over every key, then slots kk..k-1 get -1: the whole row's output, by one CTA
__device__ __forceinline__ void rank_write(const uint64_t* s, int M, int kk, int k, int* o) {
    rank_range(s, M, 0, M, kk, o);
    for (int i = kk + (int)threadIdx.x; i < k; i += blockDim.x) o[i] = -1;
}
