/* rank_grad_kernel.h — the body of the LoRA weight-gradient kernel, instantiated once per
 * instruction-set level by rank_grad.c (not a header to include anywhere else).
 *
 * Before including, define:
 *   RG_VW      floats per vector: 16 (AVX-512) or 8 (AVX2, portable)
 *   RG_PR      rows of C per register tile: 12 (AVX-512) or 6
 *   RG_ISA     2 AVX-512 intrinsics, 1 AVX2 + FMA intrinsics, 0 plain C (multiply, then add)
 *   RG_TGT     the function attribute that enables the ISA (empty for plain C)
 *   RG(name)   the instance's name for `name`
 * The algorithm (blocking, summation order) is the same in every instance; rank_grad.c says why
 * the AVX2 and AVX-512 instances give bit-identical results and the plain-C one differs by the
 * rounding of its unfused multiply-adds. */

typedef float RG(vnf) __attribute__((vector_size(RG_VW * 4)));
#define RG_CW (2 * RG_VW) /* columns per chunk */

RG_TGT static inline RG(vnf) RG(loadv)(const float *p) {
    RG(vnf) v;
    memcpy(&v, p, sizeof v);
    return v;
}

RG_TGT static inline void RG(storev)(float *p, RG(vnf) v) { memcpy(p, &v, sizeof v); }

/* all lanes = *p */
RG_TGT static inline RG(vnf) RG(broadcastv)(const float *p) {
#if RG_ISA == 2
    return (RG(vnf))_mm512_set1_ps(*p);
#elif RG_ISA == 1
    return (RG(vnf))_mm256_broadcast_ss(p);
#else
    RG(vnf) v;
    for (int i = 0; i < RG_VW; i++) v[i] = *p;
    return v;
#endif
}

/* acc + a·b: one rounding with FMA, two in plain C */
RG_TGT static inline RG(vnf) RG(fmav)(RG(vnf) a, RG(vnf) b, RG(vnf) acc) {
#if RG_ISA == 2
    return (RG(vnf))_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)acc);
#elif RG_ISA == 1
    return (RG(vnf))_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)acc);
#else
    return acc + a * b;
#endif
}

/* sums (pr rows, stride ld_sums; CW columns) += Xbᵀ · Yp over nb rows: Xb (nb, ldx) the block's X
 * rows from column p0 (the first pr values of each are used), Yp (nb, CW) one chunk's panel.
 * pr is a constant in each instantiation (rank_tile below), so the rows past it vanish. */
RG_TGT static inline __attribute__((always_inline)) void RG(rank_tile_rows)(float *sums, int ld_sums, const float *Xb,
                                                                            size_t ldx, const float *Yp, int nb,
                                                                            const int pr) {
    RG(vnf) z = {0};
    RG(vnf) c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z, c40 = z, c41 = z, c50 = z, c51 = z;
#if RG_PR == 12
    RG(vnf) c60 = z, c61 = z, c70 = z, c71 = z, c80 = z, c81 = z, c90 = z, c91 = z, c100 = z, c101 = z, c110 = z,
            c111 = z;
#endif
    for (int n = 0; n < nb; n++) {
        const float *x = Xb + (size_t)n * ldx, *y = Yp + (size_t)n * RG_CW;
        RG(vnf) y0 = RG(loadv)(y), y1 = RG(loadv)(y + RG_VW), a;
#define FL_RANK_ROW(r)                           \
    if (pr > r) {                                \
        a = RG(broadcastv)(x + r);               \
        c##r##0 = RG(fmav)(a, y0, c##r##0);      \
        c##r##1 = RG(fmav)(a, y1, c##r##1);      \
    }
        FL_RANK_ROW(0) FL_RANK_ROW(1) FL_RANK_ROW(2) FL_RANK_ROW(3) FL_RANK_ROW(4) FL_RANK_ROW(5)
#if RG_PR == 12
        FL_RANK_ROW(6) FL_RANK_ROW(7) FL_RANK_ROW(8) FL_RANK_ROW(9) FL_RANK_ROW(10) FL_RANK_ROW(11)
#endif
#undef FL_RANK_ROW
    }
    RG(vnf) acc[RG_PR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51},
#if RG_PR == 12
                             {c60, c61}, {c70, c71}, {c80, c81}, {c90, c91}, {c100, c101}, {c110, c111},
#endif
    };
    for (int k = 0; k < pr; k++) {
        float *c = sums + (size_t)k * ld_sums;
        RG(storev)(c, RG(loadv)(c) + acc[k][0]);
        RG(storev)(c + RG_VW, RG(loadv)(c + RG_VW) + acc[k][1]);
    }
}

/* rank_tile_rows with pr (1 .. PR) turned into a constant */
RG_TGT static void RG(rank_tile)(float *sums, int ld_sums, const float *Xb, size_t ldx, const float *Yp, int nb,
                                 int pr) {
    switch (pr) {
#define FL_RANK_CASE(r) \
    case r: RG(rank_tile_rows)(sums, ld_sums, Xb, ldx, Yp, nb, r); break;
    FL_RANK_CASE(1) FL_RANK_CASE(2) FL_RANK_CASE(3) FL_RANK_CASE(4) FL_RANK_CASE(5)
#if RG_PR == 12
    FL_RANK_CASE(6) FL_RANK_CASE(7) FL_RANK_CASE(8) FL_RANK_CASE(9) FL_RANK_CASE(10) FL_RANK_CASE(11)
#endif
#undef FL_RANK_CASE
    default: RG(rank_tile_rows)(sums, ld_sums, Xb, ldx, Yp, nb, RG_PR); break;
    }
}

/* Copies nb rows of Y (row stride ldy; nq columns from the group's first) into the [chunk][n][CW]
 * panels Yp: full whole chunks, then zero-padded columns up to nc chunks. A function of its own, not
 * code in the parallel region below: the region's body is outlined into a function without RG_TGT
 * (clang), where the vector helpers' ABI would change. */
RG_TGT static void RG(pack_y_block)(float *Yp, const float *Y, int ldy, int nb, int full, int nc, int nq) {
    for (int n = 0; n < nb; n++) {
        const float *y = Y + (size_t)n * ldy;
        float *yp = Yp + (size_t)n * RG_CW;
        for (int c = 0; c < full; c++) {
            RG(storev)(yp + (size_t)c * NB * RG_CW, RG(loadv)(y + c * RG_CW));
            RG(storev)(yp + (size_t)c * NB * RG_CW + RG_VW, RG(loadv)(y + c * RG_CW + RG_VW));
        }
        if (full < nc) {
            float *t = yp + (size_t)full * NB * RG_CW;
            int w = nq - full * RG_CW;
            for (int j = 0; j < RG_CW; j++) t[j] = j < w ? y[full * RG_CW + j] : 0.0f;
        }
    }
}

/* C[p][q] (or C[q][p] when transposed_store) += alpha · Σ_n X[n·ldx + p] · Y[n·ldy + q],
 * p in [0, P), q in [0, Q). */
RG_TGT static void RG(small_rank_tn)(float *C, int ldc, int transposed_store, const float *X, int ldx, const float *Y,
                                     int ldy, float alpha, size_t N, int P, int Q) {
    int n_chunks = (Q + RG_CW - 1) / RG_CW;
    #pragma omp parallel
    {
        /* column groups: a multiple of the thread count, each at most GROUP_MAX chunks */
        int threads = omp_get_num_threads();
        int n_groups = (n_chunks + GROUP_MAX - 1) / GROUP_MAX;
        n_groups = (n_groups + threads - 1) / threads * threads;
        if (n_groups > n_chunks) n_groups = n_chunks;
        int per_group = (n_chunks + n_groups - 1) / n_groups;
        float *Yp = fl_malloc(sizeof(float) * NB * RG_CW * (size_t)per_group);
        float *sums = fl_malloc(sizeof(float) * (size_t)P * RG_CW * (size_t)per_group);
        int ld_sums = RG_CW * per_group;
        #pragma omp for schedule(static)
        for (int g = 0; g < n_groups; g++) {
            int c0 = g * per_group, nc = n_chunks - c0 < per_group ? n_chunks - c0 : per_group;
            if (nc <= 0) continue;
            int q0 = c0 * RG_CW, nq = Q - q0 < nc * RG_CW ? Q - q0 : nc * RG_CW;
            int full = nq / RG_CW; /* chunks without columns past Q */
            memset(sums, 0, sizeof(float) * (size_t)P * ld_sums);
            for (size_t n0 = 0; n0 < N; n0 += NB) {
                int nb = N - n0 < NB ? (int)(N - n0) : NB;
                RG(pack_y_block)(Yp, Y + n0 * (size_t)ldy + q0, ldy, nb, full, nc, nq);
                const float *Xb = X + n0 * (size_t)ldx;
                for (int c = 0; c < nc; c++)
                    for (int p0 = 0; p0 < P; p0 += RG_PR)
                        RG(rank_tile)(sums + (size_t)p0 * ld_sums + c * RG_CW, ld_sums, Xb + p0, (size_t)ldx,
                                      Yp + (size_t)c * NB * RG_CW, nb, P - p0 < RG_PR ? P - p0 : RG_PR);
            }
            for (int p = 0; p < P; p++)
                for (int j = 0; j < nq; j++) {
                    float *c = transposed_store ? &C[(size_t)(q0 + j) * ldc + p] : &C[(size_t)p * ldc + q0 + j];
                    *c += alpha * sums[(size_t)p * ld_sums + j];
                }
        }
        free(Yp);
        free(sums);
    }
}

#undef RG_CW
