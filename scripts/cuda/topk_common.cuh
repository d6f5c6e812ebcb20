// Shared by the CUDA probe kernels (topk_row_cta.cu, cluster_floor.cu): the key contract and the final ranking.
//
// Key contract (docs/design.md §2): key = ordered(score) << 32 | (0xFFFFFFFF - column), compared as unsigned 64-bit
// (the package's signed key with the high word offset by 2^31: the same order); every NaN ranks above +inf; -inf
// is not a candidate (ordered(-inf) == NEG_INF_U, and every candidate's ordered value is above it).
#pragma once
#include <stdint.h>

#define NEG_INF_U 0x007FFFFFu  // ordered(-inf)

// -DSTAMPS (diagnostic builds only): thread 0 keeps clock64() and %globaltimer at each STAMP(i); STAMP_WRITE(n, o, k)
// writes step i's deltas (i = 1..n-1) to o[2i-2] (cycles) and o[2i-1] (ns) instead of ids, when k >= 2n - 2
#ifdef STAMPS
#define STAMP_MAX 12
#define STAMP_DECL long long st_c[STAMP_MAX]; unsigned long long st_g[STAMP_MAX]
#define STAMP(i) do { if (threadIdx.x == 0) { st_c[i] = clock64(); st_g[i] = gtimer(); } } while (0)
#define STAMP_WRITE(n, o, k) do { if (threadIdx.x == 0 && (k) >= 2 * (n) - 2) for (int i_ = 1; i_ < (n); ++i_) { \
    (o)[2 * i_ - 2] = (int)(st_c[i_] - st_c[i_ - 1]); (o)[2 * i_ - 1] = (int)(st_g[i_] - st_g[i_ - 1]); } } while (0)
__device__ __forceinline__ unsigned long long gtimer() {
    unsigned long long v;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(v));
    return v;
}
#else
#define STAMP_DECL do { } while (0)
#define STAMP(i) do { } while (0)
#endif

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

__device__ __forceinline__ uint64_t warp_max_u64(uint64_t v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const uint64_t w = __shfl_xor_sync(0xFFFFFFFFu, v, o);
        v = w > v ? w : v;
    }
    return v;
}

// A thread's share of a row: its NCOL columns xp[j * STEP] for j < nj (the rest read as -inf, not candidates), kept as
// ordered values in u (all NCOL loads issued before any use); returns the thread's best key (0 when it has no
// candidate; column col0 + j * STEP for slot j) and adds its candidates to *count.  A strict > keeps the first
// column of equal values, which is the larger key.
template <int NCOL, int STEP>
__device__ __forceinline__ uint64_t load_slice(uint32_t (&u)[NCOL], const float* xp, int nj, int col0, int* count) {
#pragma unroll
    for (int j = 0; j < NCOL; ++j) u[j] = j < nj ? __float_as_uint(__ldg(xp + j * STEP)) : 0xFF800000u;  // -inf
    uint32_t mu = NEG_INF_U;
    int mj = 0, c = 0;
#pragma unroll
    for (int j = 0; j < NCOL; ++j) {
        u[j] = ordered_u(__uint_as_float(u[j]));
        c += u[j] > NEG_INF_U;
        mj = u[j] > mu ? j : mj;
        mu = u[j] > mu ? u[j] : mu;
    }
    *count += c;
    return mu > NEG_INF_U ? make_key(mu, col0 + mj * STEP) : 0ull;
}

// Called by every thread of the CTA (uniformly: it shuffles).  s[0..M) holds M unique keys, among them the row's kk
// best.  Each key s[c], lo <= c < hi, gets its rank, the number of keys above it, counted over the M keys by SPLIT
// threads (adjacent lanes, M / SPLIT broadcast reads of shared memory each, then a shuffle sum; no sort, no
// barrier), and the key of rank r < kk writes its column to o[r].  SPLIT: the most threads per key the CTA has.
__device__ __forceinline__ void rank_range(const uint64_t* s, int M, int lo, int hi, int kk, int* o) {
    const int n = hi - lo, nt = (int)blockDim.x, t = (int)threadIdx.x;
    int split = 1;
    while (split < 32 && n * split * 2 <= nt) split <<= 1;
    const int per = nt / split, part = t & (split - 1);
    for (int b = 0; b < n; b += per) {  // the same trip count in every thread
        const int c = lo + b + t / split;
        const bool valid = c < hi;
        const uint64_t mine = valid ? s[c] : ~0ull;
        int r = 0;
#pragma unroll 4
        for (int i = part; i < M; i += split) r += s[i] > mine;
        for (int off = 1; off < split; off <<= 1) r += __shfl_xor_sync(0xFFFFFFFFu, r, off);
        if (valid && part == 0 && r < kk) o[r] = key_column(mine);
    }
}
// rank_range over every key, then slots kk..k-1 get -1: the whole row's output, by one CTA
__device__ __forceinline__ void rank_write(const uint64_t* s, int M, int kk, int k, int* o) {
    rank_range(s, M, 0, M, kk, o);
    for (int i = kk + (int)threadIdx.x; i < k; i += blockDim.x) o[i] = -1;
}
