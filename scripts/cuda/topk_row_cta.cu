// One-CTA-per-row top-k select probe (CUDA C++, not part of the dsa_lab package).
//
// Question it answers: can a select outside Triton -- shared memory, warp shuffles, block barriers, no tl.topk --
// take the 1-row select under the issue's 5 us at 64K / 256K context on this GPU?  (The Triton chain's own steps,
// timed alone in data/h200/latency_ladder.csv, say a tl.topk-based chain cannot.)  Driven and checked by
// scripts/gpu_cuda_select_probe.py; built there with nvcc for the device's own architecture.  The launcher
// guarantees every row's length is at most NT * E (columns past that would be ignored) and k <= KMAX.
//
// Contract (docs/design.md §2; keys in topk_common.cuh): a score of -inf, or a column at or past the row's length, is
// not a candidate; the row's first min(k, #candidates) columns in key order are written in any order, the remaining
// slots -1.
//
// Algorithm, one CTA of NT threads per row (-DNT / -DE; columns j * NT + t held by thread t, E per thread, in
// registers):
//  1. load, keep ordered(score) (32 bits) per column and the thread's best key m_t; count candidates C.
//  2. kk = min(k, C).  Threshold T0 = the smallest, over the A warps holding candidates, of each one's q-th best
//     m_t (q = ceil(kk / A)): then at least A * q >= kk threads have m_t >= T0, so the kk best keys are all >= T0
//     (each of those threads holds a key >= T0).  A warp with candidates in fewer than q threads: T0 = 1 (every
//     candidate).
//  3. compact the keys >= T0 into shared memory (warp-aggregated slots).  If more than CAP arrive (adversarial
//     rows), take the exact threshold instead: sort the NT thread maxima (bitonic, shared), T = the kk-th; at most
//     kk threads hold keys >= T, so at most kk * E <= CAP keys arrive.
//  4. M <= RANK_MAX candidates: rank each by counting the keys above it (rank_write); more: bitonic-sort them
//     (padded to a power of two) descending in shared memory.  Write the first kk columns, then -1.
// The step costs of each version on the H200 are in data/h200/cuda_probe/ (steps*.csv).
#include <stdint.h>

#include "topk_common.cuh"

#ifndef NT
#define NT 1024         // threads per CTA (a multiple of 32, at most 1024): -DNT=... at build time
#endif
#ifndef E
#define E 32            // columns per thread: rows of up to NT * E scores (32768: 256K context at block size 8)
#endif
#define KMAX 64         // the launcher rejects k > KMAX
#define RANK_MAX 512    // up to this many candidates are ranked by counting, more are bitonic-sorted
// candidate slots in shared memory: the exact-threshold path needs at most KMAX * E, and NT to sort the maxima
#define CAP ((KMAX * E) > NT ? (KMAX * E) : NT)

__device__ __forceinline__ int block_sum(int v, int* red) {  // every thread gets the sum; red: 32 ints
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();  // red may still be read from a previous call
    if (lane == 0) red[warp] = v;
    __syncthreads();
    v = lane < (NT / 32) ? red[lane] : 0;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
    return v;
}

// descending bitonic sort of s[0..P) (P a power of two, P <= CAP) by all NT threads; ends with a barrier
__device__ void block_sort_desc(uint64_t* s, int P) {
    for (int size = 2; size <= P; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            for (int p = threadIdx.x; p < (P >> 1); p += NT) {
                const int i = 2 * p - (p & (stride - 1));
                const int j = i + stride;
                const bool desc = (i & size) == 0;
                const uint64_t a = s[i], b = s[j];
                if ((a < b) == desc) { s[i] = b; s[j] = a; }
            }
            __syncthreads();
        }
    }
}

// keys >= thr into s (warp-aggregated slots through *cnt); returns nothing, *cnt may exceed CAP (then s holds CAP)
__device__ __forceinline__ void compact(const uint32_t (&u)[E], uint64_t thr, uint64_t* s, int* cnt) {
    const int lane = threadIdx.x & 31;
    const uint32_t hi = (uint32_t)(thr >> 32), lo = (uint32_t)thr;
#pragma unroll
    for (int j = 0; j < E; ++j) {
        const int col = j * NT + threadIdx.x;
        // columns past the row hold ordered(-inf) == NEG_INF_U, so j < nj needs no test here
        const bool take = u[j] > NEG_INF_U && (u[j] > hi || (u[j] == hi && 0xFFFFFFFFu - (uint32_t)col >= lo));
        const unsigned bal = __ballot_sync(0xFFFFFFFFu, take);
        if (bal) {
            int base = 0;
            if (lane == 0) base = atomicAdd(cnt, __popc(bal));
            base = __shfl_sync(0xFFFFFFFFu, base, 0);
            if (take) {
                const int slot = base + __popc(bal & ((1u << lane) - 1u));
                if (slot < CAP) s[slot] = make_key(u[j], col);
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(NT, 1)
topk_row_cta(const float* __restrict__ scores, long long stride, const int* __restrict__ lengths, int width,
             int k, int* __restrict__ out, int stop_after) {
    __shared__ uint64_t s[CAP];
    __shared__ int red[32];
    __shared__ int s_cnt;
    __shared__ uint64_t s_wq[32];
    const int row = blockIdx.x, t = threadIdx.x, lane = t & 31, warp = t >> 5;
    STAMP_DECL;
    STAMP(0);
    int len = lengths[row];
    len = len < 0 ? 0 : (len > width ? width : len);
    const float* x = scores + (long long)row * stride;
    int* o = out + (long long)row * k;

    // 1. load (all E loads issued before use), ordered values in place, the thread's best key, candidate count
    const float* xp = x + t;
    const int nj = len > t ? (len - t + NT - 1) / NT : 0;  // this thread's columns j * NT + t < len: j < nj
    uint32_t u[E];
    int c = 0;
    const uint64_t m = load_slice<E, NT>(u, xp, nj, t, &c);
    STAMP(1);
    const int C = block_sum(c, red);
    STAMP(2);
    const int kk = k < C ? k : C;
    if (kk == 0 || stop_after == 1) {
        for (int i = t; i < k; i += NT) o[i] = kk == 0 ? -1 : C;  // (stop_after 1: timing only)
        return;
    }

    // 2. T0: over the warps holding candidates (A of them), the smallest of each one's q-th best thread maximum,
    //    q = ceil(kk / A): then at least A * q >= kk threads have their best key >= T0
    uint64_t mq = warp_max_u64(m), cur = m;
    if (lane == 0) s_wq[warp] = mq;
    __syncthreads();
    const unsigned act = __ballot_sync(0xFFFFFFFFu, lane < NT / 32 && s_wq[lane] > 0);  // warps with candidates
    const int A = __popc(act);
    int q = (kk + A - 1) / A;
    q = q > 32 ? 32 : q;
    for (int r = 1; r < q; ++r) {  // the warp's (r+1)-th best; 0 when it has fewer candidate threads
        if (cur == mq) cur = 0;    // keys are unique: exactly one lane drops out (none when mq == 0)
        mq = warp_max_u64(cur);
    }
    STAMP(3);
    __syncthreads();  // every read of s_wq above is done
    if (lane == 0) s_wq[warp] = mq;
    if (t == 0) s_cnt = 0;
    __syncthreads();
    // every warp reduces the NT / 32 entries itself (a lane each): no extra barrier
    const uint64_t a = lane < NT / 32 ? s_wq[lane] : 0ull;
    uint64_t thr = a > 0 ? a : ~0ull;
#pragma unroll
    for (int o2 = 16; o2 > 0; o2 >>= 1) {
        const uint64_t b = __shfl_xor_sync(0xFFFFFFFFu, thr, o2);
        thr = b < thr ? b : thr;
    }
    // a warp with candidates but fewer than q candidate threads: take every candidate
    const bool short_warp = __ballot_sync(0xFFFFFFFFu, ((act >> lane) & 1u) && a == 0) != 0;
    if (short_warp || thr == ~0ull) thr = 1;
    // 3. compact
    STAMP(4);
    compact(u, thr, s, &s_cnt);
    __syncthreads();
    int M = s_cnt;
    STAMP(5);
    if (M > CAP) {  // exact threshold from the sorted thread maxima: at most kk * E keys reach it
        s[t] = m;  // NT <= CAP slots (NT is a power of two here: 512 or 1024)
        __syncthreads();
        block_sort_desc(s, NT);
        thr = s[kk - 1];
        __syncthreads();
        if (t == 0) s_cnt = 0;
        __syncthreads();
        compact(u, thr, s, &s_cnt);
        __syncthreads();
        M = s_cnt;
    }

    if (stop_after == 2) {  // timing only: the compaction's count
        for (int i = t; i < k; i += NT) o[i] = M;
        return;
    }

    // 4. rank or sort the candidates, write the first kk
    if (M <= RANK_MAX) {  // rank by counting: no sort, no barrier (the usual case)
        rank_write(s, M, kk, k, o);
        STAMP(6);
    } else {
        int P = 64;
        while (P < M) P <<= 1;
        for (int i = M + t; i < P; i += NT) s[i] = 0;  // below every candidate key
        __syncthreads();
        block_sort_desc(s, P);
        STAMP(6);
        for (int i = t; i < k; i += NT) o[i] = i < kk ? key_column(s[i]) : -1;
    }
#ifdef STAMPS
    __syncthreads();
    STAMP(7);
    if (row == 0) STAMP_WRITE(8, o, k);
#endif
}
