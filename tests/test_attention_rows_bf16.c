/* test_attention_rows_bf16.c — the bf16 attention's fused row steps (backend/cpu/
 * attention_rows_bf16.h) against the scalar path they replace: att_backward_row on each row of the
 * pair and then tg16_pack_panels / tg16_pack_rows, word for word, every output buffer compared
 * whole (so a word written past its place, or one left out, shows as a differing sentinel). The
 * claim is bit equality, so the tolerance is zero: the shapes cover ragged key counts (panels and
 * words cut short), odd pairs, empty and one-key ranges, ranges starting and ending mid-vector,
 * and exponents below fl_expf's −87.3 cut. Skipped below AVX512_BF16, where the fused steps do not
 * run (cpu_attention_bf16.c then takes the scalar path, which test_cpu_attention.c checks). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/attention_rows_bf16.h"
#include "backend/cpu/cpu_attention_rows.h"
#include "backend/cpu/tile_gemm_bf16.h"
#include "common/rng.h"
#include "test.h"

enum { LD = 264, MAX_NQ = 256, SENTINEL = 0x5a5a5a5a };

typedef struct { int nq, pair, j0[2], j1[2]; float L[2], D[2], spread; } pair_case;

/* Runs one case both ways; returns the number of differing words over the three outputs. */
static int differing_words(const pair_case *c, uint64_t seed) {
    static float raw_p[2 * LD], raw_ds[2 * LD], p[2 * LD], ds[2 * LD];
    fl_rng_fill_uniform(raw_p, 2 * LD, fl_rng_stream(31, seed, c->nq, c->pair), -c->spread, c->spread);
    fl_rng_fill_uniform(raw_ds, 2 * LD, fl_rng_stream(32, seed, c->nq, c->pair), -2.0f, 2.0f);
    float scale = 0.125f;
    int64_t panels = (c->nq + 15) / 16, tile_panel = 16, kw = tg16_words(c->nq);
    size_t panel_words = (size_t)panels * tile_panel, row_words = 2 * (size_t)kw;
    size_t words = 2 * panel_words + row_words, total = 2 * words + 16; /* and 16 sentinel words past got */
    uint32_t *want = malloc(sizeof(uint32_t) * total), *got = want + words;
    for (size_t i = 0; i < total; i++) want[i] = SENTINEL;
    /* the scalar path */
    memcpy(p, raw_p, sizeof p);
    memcpy(ds, raw_ds, sizeof ds);
    for (int i = 0; i < c->pair; i++)
        att_backward_row(p + i * LD, ds + i * LD, c->nq, c->j0[i], c->j1[i], c->L[i], c->D[i], scale, 0.0f);
    tg16_pack_panels(want, tile_panel, p, LD, c->pair, c->nq);
    tg16_pack_panels(want + panel_words, tile_panel, ds, LD, c->pair, c->nq);
    tg16_pack_rows(want + 2 * panel_words, kw, ds, LD, c->pair, c->nq);
    /* the fused step, from the raw rows */
    att_backward_pair_bf16(raw_p, raw_ds, LD, c->pair, c->nq, c->j0, c->j1, c->L, c->D, scale, got, got + panel_words,
                           tile_panel, got + 2 * panel_words, kw);
    int diff = 0;
    for (size_t i = 0; i < words; i++) diff += want[i] != got[i];
    for (size_t i = 2 * words; i < total; i++) diff += want[i] != SENTINEL;
    free(want);
    return diff;
}

TEST(attention_rows_bf16_fused_backward_is_the_scalar_path_bit_for_bit) {
    if (!att_rows_bf16_fused()) SKIP("the fused row steps need AVX512_BF16");
    static const int nqs[] = {1, 2, 15, 16, 17, 31, 32, 33, 47, 64, 100, 255, 256};
    int cases = 0, bad = 0;
    for (size_t n = 0; n < sizeof nqs / sizeof *nqs; n++)
        for (int pair = 1; pair <= 2; pair++)
            for (int shape = 0; shape < 5; shape++) {
                int nq = nqs[n];
                pair_case c = {nq, pair, {0, 0}, {nq, nq}, {1.5f, -0.75f}, {0.25f, -1.0f}, 8.0f};
                switch (shape) {
                case 1: /* causal diagonal: the second row sees one key more */
                    c.j1[0] = nq > 1 ? nq - 1 : nq;
                    break;
                case 2: /* a document starting mid-vector, ending mid-vector */
                    c.j0[0] = c.j0[1] = nq / 3;
                    c.j1[0] = c.j1[1] = nq - nq / 5;
                    break;
                case 3: /* empty and one-key ranges */
                    c.j0[0] = c.j1[0] = nq / 2;
                    c.j0[1] = nq - 1;
                    break;
                case 4: /* exponents far below −87.3: p is 0 there, ds too */
                    c.L[0] = 150.0f;
                    c.spread = 1200.0f;
                    break;
                }
                int d = differing_words(&c, (uint64_t)(n * 10 + shape));
                CHECK_MSG(d == 0, "nq %d pair %d shape %d: %d words differ", nq, pair, shape, d);
                bad += d != 0;
                cases++;
            }
    CHECK(cases == 130 && bad == 0);
}

/* The forward's fused step against att_forward_row + tg16_pack_rows: the probability words, the
 * running max and the correction bit for bit; the running sum to nk·2⁻²⁴ of its terms' total, the
 * bound of reordering a sum of nk positive f32 terms (each partial sum rounds once, ≤ 2⁻²⁴ of it). */
TEST(attention_rows_bf16_fused_forward_is_the_scalar_path) {
    if (!att_rows_bf16_fused()) SKIP("the fused row steps need AVX512_BF16");
    static const int nks[] = {1, 2, 15, 16, 17, 31, 32, 33, 64, 100, 255, 256};
    static const float prior_max[] = {-INFINITY, -3.0f, 0.5f, 40.0f};
    static float raw[LD], s[LD];
    uint32_t want[LD / 2 + 16], got[LD / 2 + 16];
    int cases = 0;
    for (size_t n = 0; n < sizeof nks / sizeof *nks; n++)
        for (int shape = 0; shape < 4; shape++)
            for (int pm = 0; pm < 4; pm++) {
                int nk = nks[n], j0 = 0, j1 = nk;
                float spread = 8.0f;
                if (shape == 1) j1 = nk > 1 ? nk - 1 : nk;          /* the causal diagonal */
                if (shape == 2) { j0 = nk / 3; j1 = nk - nk / 5; }   /* a document mid-tile */
                if (shape == 3) { j0 = j1 = nk / 2; spread = 900.0f; } /* nothing seen */
                fl_rng_fill_uniform(raw, LD, fl_rng_stream(33, n, shape, pm), -spread, spread);
                float max_a = prior_max[pm], sum_a = pm ? 2.5f : 0.0f, max_b = max_a, sum_b = sum_a;
                int64_t kw = tg16_words(nk);
                for (int i = 0; i < LD / 2 + 16; i++) want[i] = got[i] = SENTINEL;
                memcpy(s, raw, sizeof s);
                float corr_a = att_forward_row(s, nk, j0, j1, 0.125f, 0.0f, &max_a, &sum_a);
                tg16_pack_rows(want, kw, s, LD, 1, nk);
                float corr_b = att_forward_row_bf16(raw, nk, j0, j1, 0.125f, &max_b, &sum_b, got);
                int diff = 0;
                for (int i = 0; i < LD / 2 + 16; i++) diff += want[i] != got[i];
                double terms = 0;
                for (int j = j0; j < j1; j++) terms += s[j];
                double bound = (nk + 1) * ldexp(1.0, -24) * (terms + sum_a);
                CHECK_MSG(diff == 0, "nk %d shape %d prior %g: %d words differ", nk, shape, max_a, diff);
                CHECK_MSG(max_a == max_b && corr_a == corr_b, "nk %d shape %d: max %g/%g corr %g/%g", nk, shape,
                          max_a, max_b, corr_a, corr_b);
                CHECK_MSG(fabs(sum_a - sum_b) <= bound, "nk %d shape %d: sum %.9g vs %.9g", nk, shape, sum_a, sum_b);
                cases++;
            }
    CHECK(cases == 192);
}
