// A multi-CTA (thread-block cluster) top-k select for the common case only: what a design of that shape costs here.
// Not part of the dsa_lab package, and not a complete select: rows outside its case are refused, visibly (below).
//
// Question: the one-CTA kernel (topk_row_cta.cu) is bound by one SM's issue rate over a 256K row's 32768 scores.
// Spreading a row over a cluster of G CTAs divides that work; a select then needs two cluster-wide exchanges through
// distributed shared memory (DSMEM) and a final ranking, here shared by the CTAs.  (The file's name is its first
// version's, a timing-only skeleton; the data in data/h200/cuda_probe/ refer to it.)  Steps, CTA g of the row's
// cluster holding columns g * NT * E + j * NT + t (thread t, E per thread, in registers):
//   0. arrive at a cluster barrier (every CTA must be running before DSMEM writes reach it), wait for it after the
//      loads of 1;
//   1. load, ordered values, count, the thread's best key m_t; per warp: the best m_t and the count.  Every warp
//      writes both into every CTA of the cluster (DSMEM); cluster barrier.
//   1b. (-DCTA_Q=1; measured: M falls 2-5x but this step costs ~2.5K cycles, a net loss except at 32 x 256K)
//      each CTA also finds its q-th best thread value, q =
//      ceil(k / G) (32-bit ordered values, counted with multiplicity: per warp with redux / ballot rounds, then warp 0
//      over the warps' lists) and writes it into every CTA with the rest.
//   2. every CTA alike: C = the row's candidates, kk = min(k, C), A = the cluster's warps holding a candidate.  The
//      common case, kk <= A: T0 = the smallest of those warps' best keys; A >= kk threads hold a key >= T0, so the kk
//      best keys are all >= T0 (the one-CTA kernel's rule with q = 1).  With 1b, when every CTA has q candidate
//      threads: T1 = (the smallest CTA's q-th value) << 32; G * q >= kk threads hold a key >= T1, so T1 is valid too,
//      and the larger of the valid ones is taken.  scripts/cuda/cluster_threshold_model.py (numpy, 100 normal
//      1 x 256K rows, 8 x 256 x 16) puts the keys >= T0 at a median of 296 (p90 400) and those >= T1 at 102 (p90
//      126); the probe's rows on the GPU had 231-435 with T0 alone.
//   3. compact the keys >= T0 straight into this CTA's segment of every CTA (DSMEM, at most SLOTS; slots from a
//      per-thread count, a warp scan and one shared atomic per warp); cluster barrier.
//   4. every CTA: gather the segments (the same M keys everywhere) and rank its share of them, about M / G, against
//      all M by counting (topk_common.cuh); the key of rank r < kk writes o[r].  Rank 0 writes the -1 slots.
// Outside the common case -- kk > A (candidates in fewer than kk warps: with k = 64 and 64 warps, a row shorter
// than about 7/8 of the build's width, since each CTA's slice is contiguous), or
// more than SLOTS keys >= T0 in one CTA (rows of equal values, ramps, adversarial rows) -- rank 0 writes -2 in
// every slot, so the probe's check fails for that row
// instead of passing a wrong answer.  The fallbacks a complete kernel needs there (a larger q, an exact threshold)
// are not written.  stop_after (timing only): 1 returns at once (the launch), 2 after step 1's loads and warp
// reductions, 3 after the first cluster barrier, 4 writes M (rank 0, o[0]) instead of ranking; 0 runs everything.
#include <stdint.h>

#include <cooperative_groups.h>
#include <utility>

#include "topk_common.cuh"

namespace cg = cooperative_groups;

#ifndef NT
#define NT 256
#endif
#ifndef E
#define E 16
#endif
#ifndef G
#define G 8             // CTAs per cluster (8 is the portable maximum)
#endif
#define W (NT / 32)     // warps per CTA
#define SLOTS 128       // candidate slots of each CTA's segment (every CTA holds all G segments)
#ifndef CTA_Q
#define CTA_Q 0         // -DCTA_Q=1: also the tighter per-CTA threshold (step 1b below)
#endif
#define QMAX ((64 + G - 1) / G)     // the largest per-CTA q: k <= 64 (the probe's KMAX)
#define NV ((W * QMAX + 31) / 32)   // values per lane when warp 0 merges the warps' lists

// u[j] for a j known only at run time, without indexing the register array (which would move it to local memory)
__device__ __forceinline__ uint32_t u_at(const uint32_t (&u)[E], int j) {
    uint32_t v = 0;
#pragma unroll
    for (int i = 0; i < E; ++i) v = i == j ? u[i] : v;
    return v;
}

extern "C" __global__ void __cluster_dims__(G, 1, 1) __launch_bounds__(NT, 1)
cluster_floor(const float* __restrict__ scores, long long stride, const int* __restrict__ lengths, int width, int k,
              int* __restrict__ out, int stop_after) {
    __shared__ uint64_t s_wm[G * W];       // every warp of the cluster: its best key (0: no candidate)
    __shared__ int s_wc[G * W];            // ... and its candidate count
    __shared__ uint64_t s_cand[G * SLOTS]; // every CTA's segment
    __shared__ uint64_t s_flat[G * SLOTS]; // the segments gathered
    __shared__ int s_nc[G];                // each segment's length, -1 when it overflowed
    __shared__ int s_lc;
#if CTA_Q
    __shared__ uint32_t s_top[W * QMAX];  // each warp's best thread values, with multiplicity, descending (0: none)
    __shared__ uint32_t s_cq[G];          // every CTA's q-th best thread value (0: fewer than q candidate threads)
#endif
    if (stop_after == 1) return;
    STAMP_DECL;
    STAMP(0);
    cg::cluster_group cl = cg::this_cluster();
    // every CTA of the cluster must be running before any writes into its shared memory: arrive now, wait just
    // before the first DSMEM write, so the barrier's latency overlaps the loads
    auto started = cl.barrier_arrive();
    const int g = (int)cl.block_rank(), row = blockIdx.x / G, t = threadIdx.x, lane = t & 31, warp = t >> 5;
    int len = lengths[row];
    len = len < 0 ? 0 : (len > width ? width : len);
    const int base = g * NT * E;
    const float* xp = scores + (long long)row * stride + base + t;
    int* o = out + (long long)row * k;
    const int nj = len > base + t ? (len - base - t + NT - 1) / NT : 0;

    // 1. load, count, best key; warp best and count to every CTA
    uint32_t u[E];
    int c = 0;
    const uint64_t m = load_slice<E, NT>(u, xp, nj, base + t, &c);
    STAMP(1);
    const uint64_t wm = warp_max_u64(m);
    const int wc = __reduce_add_sync(0xFFFFFFFFu, c);
#if CTA_Q
    // 1b. the CTA's q-th best thread value: each warp lists its best q (value, repeated per thread holding it) ...
    const int q = (k + G - 1) / G;
    {
        uint32_t cur = (uint32_t)(m >> 32);  // 0: no candidate
        int got = 0;
        while (got < q) {  // warp-uniform
            const uint32_t mx = __reduce_max_sync(0xFFFFFFFFu, cur);
            if (mx == 0u) break;
            const int n = __popc(__ballot_sync(0xFFFFFFFFu, cur == mx));
            if (lane < n && got + lane < q) s_top[warp * QMAX + got + lane] = mx;
            cur = cur == mx ? 0u : cur;
            got += n;
        }
        for (int i = got + lane; i < q; i += 32) s_top[warp * QMAX + i] = 0u;
    }
    __syncthreads();
    // ... and warp 0 takes the q-th largest of the lists (0 when the CTA has fewer than q candidate threads)
    uint32_t cq = 0u;
    if (warp == 0) {
        uint32_t vals[NV];
#pragma unroll
        for (int r = 0; r < NV; ++r) {
            const int i = lane * NV + r;
            vals[r] = i < W * QMAX && i % QMAX < q ? s_top[i] : 0u;
        }
        int got = 0;
        while (got < q) {
            uint32_t lm = 0u;
#pragma unroll
            for (int r = 0; r < NV; ++r) lm = vals[r] > lm ? vals[r] : lm;
            const uint32_t mx = __reduce_max_sync(0xFFFFFFFFu, lm);
            if (mx == 0u) break;
#pragma unroll
            for (int r = 0; r < NV; ++r) {
                got += __popc(__ballot_sync(0xFFFFFFFFu, vals[r] == mx));
                vals[r] = vals[r] == mx ? 0u : vals[r];
            }
            cq = got >= q ? mx : 0u;
        }
    }
#endif
    STAMP(2);
    cl.barrier_wait(std::move(started));
    STAMP(3);
    if (stop_after == 2) {  // timing only
        if (t == 0) o[g] = wc;
        return;
    }
    if (lane < G) {
        *cl.map_shared_rank(&s_wm[g * W + warp], lane) = wm;
        *cl.map_shared_rank(&s_wc[g * W + warp], lane) = wc;
    }
#if CTA_Q
    if (warp == 0 && lane < G) *cl.map_shared_rank(&s_cq[g], lane) = cq;
#endif
    if (t == 0) s_lc = 0;
    cl.sync();
    STAMP(4);
    if (stop_after == 3) return;

    // 2. the threshold, every warp alike (G * W entries, a few per lane)
    uint64_t thr = ~0ull;
    int cc = 0, a = 0;
#pragma unroll
    for (int i = lane; i < G * W; i += 32) {
        const uint64_t v = s_wm[i];
        cc += s_wc[i];
        a += v > 0;
        thr = v > 0 && v < thr ? v : thr;
    }
    cc = __reduce_add_sync(0xFFFFFFFFu, cc);
    a = __reduce_add_sync(0xFFFFFFFFu, a);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const uint64_t v = __shfl_xor_sync(0xFFFFFFFFu, thr, off);
        thr = v < thr ? v : thr;
    }
    const int kk = k < cc ? k : cc;
#if CTA_Q
    uint32_t tb = 0xFFFFFFFFu;
    bool vb = true;
#pragma unroll
    for (int i = 0; i < G; ++i) {
        vb &= s_cq[i] != 0u;
        tb = s_cq[i] < tb ? s_cq[i] : tb;
    }
    // T1 = every key whose value is at least tb: G * q >= k >= kk threads reach it
    const uint64_t thr_b = vb ? (uint64_t)tb << 32 : 0ull;
    if (kk > 0 && (kk <= a || vb)) {
        thr = kk <= a ? thr : 0ull;
        thr = thr_b > thr ? thr_b : thr;
    } else
#endif
    if (kk == 0 || kk > a) {  // no candidate, or outside the common case (-2: refused, visibly)
        if (g == 0)
            for (int i = t; i < k; i += NT) o[i] = kk == 0 ? -1 : -2;
        return;
    }

    STAMP(5);
    // 3. count first (a bit per column), one shared atomic per warp, then every taken key straight into this CTA's
    //    segment of every CTA
    const uint32_t hi = (uint32_t)(thr >> 32), lo = (uint32_t)thr;
    uint64_t mask = 0;
    int mine = 0;
#pragma unroll
    for (int j = 0; j < E; ++j) {
        const int col = base + j * NT + t;
        const bool take = u[j] > NEG_INF_U && (u[j] > hi || (u[j] == hi && 0xFFFFFFFFu - (uint32_t)col >= lo));
        mask |= (uint64_t)take << j;
        mine += take;
    }
    int incl = mine;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const int v = __shfl_up_sync(0xFFFFFFFFu, incl, off);
        incl += lane >= off ? v : 0;
    }
    int wbase = 0;
    if (lane == 31 && incl) wbase = atomicAdd(&s_lc, incl);
    int slot = __shfl_sync(0xFFFFFFFFu, wbase, 31) + incl - mine;
    while (mask) {
        const int j = __ffsll((long long)mask) - 1;
        mask &= mask - 1;
        if (slot < SLOTS) {
            const uint64_t key = make_key(u_at(u, j), base + j * NT + t);
#pragma unroll
            for (int d = 0; d < G; ++d) cl.map_shared_rank(s_cand, d)[g * SLOTS + slot] = key;
        }
        ++slot;
    }
    __syncthreads();
    STAMP(6);
    const int n = s_lc;
    if (t < G) *cl.map_shared_rank(&s_nc[g], t) = n <= SLOTS ? n : -1;
    STAMP(7);
    cl.sync();
    STAMP(8);

    // 4. every CTA: gather, rank its share, write
    int M = 0;
    bool over = false;
#pragma unroll
    for (int i = 0; i < G; ++i) { over |= s_nc[i] < 0; M += s_nc[i] < 0 ? 0 : s_nc[i]; }
    if (over) {
        if (g == 0)
            for (int i = t; i < k; i += NT) o[i] = -2;
        return;
    }
    if (stop_after == 4) {  // timing / diagnostics: the candidate count
        if (g == 0 && t == 0) o[0] = M;
        return;
    }
    for (int p = t; p < M; p += NT) {
        int q = p, i = 0;
        while (q >= s_nc[i]) q -= s_nc[i++];
        s_flat[p] = s_cand[i * SLOTS + q];
    }
    __syncthreads();
    STAMP(9);
    const int share = (M + G - 1) / G, c0 = g * share, c1 = c0 + share < M ? c0 + share : M;
    rank_range(s_flat, M, c0, c1, kk, o);
    if (g == 0)
        for (int i = kk + t; i < k; i += NT) o[i] = -1;
#ifdef STAMPS
    STAMP(10);
    cl.sync();  // every CTA's ids are written: the stamps replace them
    if (g == 0 && row == 0) STAMP_WRITE(11, o, k);
#endif
}
