/* plan_report.c — table, JSON, HTML and words of `fastlora plan` (see plan_report.h). */
#include "plan/plan_report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engine/flops.h"
#include "engine/model.h"
#include "io/file_util.h"

/* ---- rankings and words ---------------------------------------------------------------------- */

static const fl_plan_report *rank_ctx;

/* seconds per token: ranks the same as the run's time, and works without --tokens */
static double sec_per_tok(const fl_plan_result *x) { return 1.0 / x->tok_s; }
static double usd_per_mtok(const fl_plan_result *x) { return x->gpu->price_usd_hr / 3600.0 / x->tok_s * 1e6; }

static int cmp_time(const void *a, const void *b) {
    double u = sec_per_tok(&rank_ctx->res[*(const int *)a]), v = sec_per_tok(&rank_ctx->res[*(const int *)b]);
    return (u > v) - (u < v);
}
static int cmp_cost(const void *a, const void *b) {
    double u = usd_per_mtok(&rank_ctx->res[*(const int *)a]), v = usd_per_mtok(&rank_ctx->res[*(const int *)b]);
    return (u > v) - (u < v);
}

int fl_plan_rank_by_time(const fl_plan_report *r, int *idx) {
    int n = 0;
    for (int i = 0; i < r->n; i++)
        if (r->res[i].fits && r->res[i].tok_s > 0) idx[n++] = i;
    rank_ctx = r;
    qsort(idx, (size_t)n, sizeof *idx, cmp_time);
    return n;
}

int fl_plan_rank_by_cost(const fl_plan_report *r, int *idx) {
    int n = 0;
    for (int i = 0; i < r->n; i++)
        if (r->res[i].fits && r->res[i].tok_s > 0 && r->res[i].gpu->price_usd_hr >= 0) idx[n++] = i;
    rank_ctx = r;
    qsort(idx, (size_t)n, sizeof *idx, cmp_cost);
    return n;
}

static void describe(const fl_plan_report *r, const fl_plan_result *x, char *buf, size_t cap) {
    char t[96];
    if (x->time_s > 0) {
        fl_plan_format_duration(x->time_s, 1, t, sizeof t);
        if (x->cost_usd >= 0) snprintf(buf, cap, "%s (%s, $%.2f)", x->gpu->short_name, t, x->cost_usd);
        else snprintf(buf, cap, "%s (%s)", x->gpu->short_name, t);
    } else if (x->gpu->price_usd_hr >= 0) {
        snprintf(buf, cap, "%s (%.0f tok/s, $%.2f per million tokens)", x->gpu->short_name, x->tok_s, usd_per_mtok(x));
    } else {
        snprintf(buf, cap, "%s (%.0f tok/s)", x->gpu->short_name, x->tok_s);
    }
    (void)r;
}

#define APPEND(...) snprintf(buf + strlen(buf), cap - strlen(buf), __VA_ARGS__)

/* The request's mode bits other than recompute (plan.h). */
static unsigned quant_mode(const fl_plan_request *rq) { return rq->quant == FL_QUANT_NF4 ? FL_PLAN_NF4 : 0; }

void fl_plan_recommend(const fl_plan_report *r, char *buf, size_t cap) {
    buf[0] = 0;
    int *bt = fl_calloc((size_t)r->n + 1, sizeof(int)), *bc = fl_calloc((size_t)r->n + 1, sizeof(int));
    int nt = fl_plan_rank_by_time(r, bt), nc = fl_plan_rank_by_cost(r, bc);
    char d[256];
    if (nt == 0) {
        double need = r->n ? fl_plan_memory_compute(&r->rq.cfg, &r->rq.lc, 1, r->rq.seq, r->rq.target,
                                                    quant_mode(&r->rq) | FL_PLAN_RECOMPUTE).total : 0;
        APPEND("Nothing listed fits this run: it needs %.1f GiB even at micro-batch 1 with recompute. Try a shorter "
               "--seq, fewer --targets or a lower --rank%s.", need / 1073741824.0,
               r->rq.quant == FL_QUANT_NF4 ? "" : ", or --quant nf4");
        free(bt);
        free(bc);
        return;
    }
    const fl_plan_result *fast = &r->res[bt[0]];
    describe(r, fast, d, sizeof d);
    APPEND("Fastest: %s.", d);
    if (nc > 0) {
        const fl_plan_result *cheap = &r->res[bc[0]];
        if (cheap != fast) {
            describe(r, cheap, d, sizeof d);
            APPEND(" Cheapest: %s.", d);
        } else {
            APPEND(" It is also the cheapest per token.");
        }
        /* best balance: the cheapest among those within 2x of the fastest time */
        for (int k = 0; k < nc; k++) {
            const fl_plan_result *x = &r->res[bc[k]];
            if (sec_per_tok(x) <= 2.0 * sec_per_tok(fast)) {
                if (x != fast && x != cheap) {
                    describe(r, x, d, sizeof d);
                    APPEND(" Balance: %s — within 2x of the fastest for less money.", d);
                }
                break;
            }
        }
    }
    /* cards without a price: the best of them (owned hardware, workstations) */
    for (int k = 0; k < nt; k++) {
        const fl_plan_result *x = &r->res[bt[k]];
        if (x->gpu->price_usd_hr < 0 && x != fast) {
            describe(r, x, d, sizeof d);
            APPEND(" On hardware you own (no rental price listed), the fastest is %s.", d);
            break;
        }
    }
    int nofit = 0, needs_rc = 0;
    for (int i = 0; i < r->n; i++) {
        nofit += !r->res[i].fits;
        needs_rc += r->res[i].fits && r->res[i].recompute_needed;
    }
    if (nofit) {
        APPEND(" Does not fit:");
        int shown = 0;
        for (int i = 0; i < r->n; i++)
            if (!r->res[i].fits) APPEND("%s %s", shown++ ? "," : "", r->res[i].gpu->short_name);
        APPEND(".");
    }
    if (needs_rc) APPEND(" %d GPU%s only fit with activation recompute (train --recompute).", needs_rc,
                         needs_rc == 1 ? "" : "s");
    int calibrated = r->cal && r->cal->n_cuda > 0;
    if (!calibrated && r->rq.target == FL_TARGET_CUDA)
        APPEND(" Speeds are predictions at the default GEMM efficiency %.2f: run `fastlora bench --json FILE` on one GPU "
               "and pass --records FILE to calibrate.", FL_PLAN_DEFAULT_COMPUTE_EFF);
    free(bt);
    free(bc);
}

/* ---- table ----------------------------------------------------------------------------------- */

static void print_memory(FILE *out, const fl_plan_memory *a, const fl_plan_memory *b, const char *ha, const char *hb) {
    char x[32], y[32];
    fprintf(out, "  %-36s %12s %12s\n", "", ha, hb);
#define X(field, label)                                                  \
    fl_plan_format_bytes(a->field, x, sizeof x);                         \
    fl_plan_format_bytes(b->field, y, sizeof y);                         \
    fprintf(out, "  %-36s %12s %12s\n", label, x, y);
    FL_PLAN_MEM_CATEGORIES(X)
#undef X
    fl_plan_format_bytes(a->total, x, sizeof x);
    fl_plan_format_bytes(b->total, y, sizeof y);
    fprintf(out, "  %-36s %12s %12s\n", "total", x, y);
}

void fl_plan_report_table(const fl_plan_report *r, FILE *out) {
    const fl_plan_request *rq = &r->rq;
    fprintf(out, "fastlora plan: %s, LoRA r=%d alpha=%g on %s, micro-batch %d x seq %d (%s%s)\n", r->model_label,
            rq->lc.rank, rq->lc.alpha, rq->targets, rq->batch, rq->seq,
            rq->target == FL_TARGET_CUDA ? "CUDA, bf16 activations" : "CPU, f32",
            rq->quant == FL_QUANT_NF4 ? "; frozen projections NF4" : "");
    if (rq->tokens > 0) fprintf(out, "  %.4g tokens x %g epoch%s; %s\n", rq->tokens, rq->epochs, rq->epochs == 1 ? "" : "s",
                                r->tokens_note);
    if (rq->gpus > 1)
        fprintf(out, "  data parallel on %d GPUs of each kind (micro-batch per GPU; tok/s, time and cost are for all %d; "
                     "the LoRA gradients, %.1f MiB f32, all-reduced once per step: docs/DISTRIBUTED.md)\n", rq->gpus,
                rq->gpus, 4.0 * (double)fl_lora_param_count(&rq->cfg, &rq->lc) / 1048576.0);
    fprintf(out, "\nmemory at batch %d (the engine's allocations):\n", rq->batch);
    fl_plan_memory with_rc = fl_plan_memory_compute(&rq->cfg, &rq->lc, rq->batch, rq->seq, rq->target,
                                                    quant_mode(rq) | FL_PLAN_RECOMPUTE);
    fl_plan_memory no_rc = fl_plan_memory_compute(&rq->cfg, &rq->lc, rq->batch, rq->seq, rq->target, quant_mode(rq));
    print_memory(out, &no_rc, &with_rc, "as is", "recompute");
    fprintf(out, "\n%-13s %-19s %-5s %6s %6s %9s %-8s %-26s %9s  %s\n", "GPU", "need / usable GiB", "fits", "max B",
            "max B", "tok/s", "", rq->tokens > 0 ? "time" : "", rq->tokens > 0 ? "cost" : "$/Mtok", "note");
    fprintf(out, "%-13s %-19s %-5s %6s %6s %9s %-8s %-26s %9s\n", "", "", "", "", "+recomp", "", "", "", "");
    for (int i = 0; i < r->n; i++) {
        const fl_plan_result *x = &r->res[i];
        char mem[32], tok[16], when[64], cost[16], mb[8], mbr[8];
        snprintf(mem, sizeof mem, "%.1f / %.1f", x->mem.total / 1073741824.0, x->usable_bytes / 1073741824.0);
        snprintf(mb, sizeof mb, "%d", x->max_batch);
        snprintf(mbr, sizeof mbr, "%d", x->max_batch_recompute);
        if (x->fits) snprintf(tok, sizeof tok, "%.0f", x->tok_s);
        else snprintf(tok, sizeof tok, "-");
        if (x->time_s > 0) fl_plan_format_duration(x->time_s, 1, when, sizeof when);
        else snprintf(when, sizeof when, "%s", "");
        if (rq->tokens > 0 && x->cost_usd >= 0) snprintf(cost, sizeof cost, "$%.2f", x->cost_usd);
        else if (rq->tokens <= 0 && x->fits && x->gpu->price_usd_hr >= 0) snprintf(cost, sizeof cost, "$%.2f", usd_per_mtok(x));
        else snprintf(cost, sizeof cost, "-");
        const char *fits = !x->fits ? "no" : x->recompute ? "rc" : x->grad_accum > 1 ? "acc" : "yes";
        fprintf(out, "%-13.13s %-19s %-5s %6s %6s %9s %-8s %-26s %9s  %s\n", x->gpu->short_name, mem, fits, mb, mbr, tok,
                x->fits ? (x->measured ? "measured" : "model") : "", when, cost, x->note);
    }
    fprintf(out, "\nfits: yes | acc = fits at a smaller micro-batch with gradient accumulation | rc = with --recompute"
                 " | no.\nspeed source: ");
    if (r->n) fprintf(out, "%s", r->res[0].tok_s_source[0] && strcmp(r->res[0].tok_s_source, "-") ? r->res[0].tok_s_source : "");
    for (int i = 1; i < r->n; i++)
        if (strcmp(r->res[i].tok_s_source, r->res[0].tok_s_source) && strcmp(r->res[i].tok_s_source, "-"))
            fprintf(out, "; %s: %s", r->res[i].gpu->short_name, r->res[i].tok_s_source);
    fprintf(out, "\n");
    int *idx = fl_calloc((size_t)r->n + 1, sizeof(int));
    int n = fl_plan_rank_by_time(r, idx);
    fprintf(out, "\nby time:");
    for (int k = 0; k < n; k++) fprintf(out, "%s %s", k ? "," : "", r->res[idx[k]].gpu->short_name);
    n = fl_plan_rank_by_cost(r, idx);
    fprintf(out, "\nby cost:");
    for (int k = 0; k < n; k++) fprintf(out, "%s %s", k ? "," : "", r->res[idx[k]].gpu->short_name);
    if (!n) fprintf(out, " (no prices)");
    free(idx);
    char rec[2048];
    fl_plan_recommend(r, rec, sizeof rec);
    fprintf(out, "\n\n%s\n", rec);
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static json_t *memory_json(const fl_plan_memory *m) {
    json_t *o = json_object();
#define X(field, label) json_object_set_new(o, #field, json_real(m->field));
    FL_PLAN_MEM_CATEGORIES(X)
#undef X
    json_object_set_new(o, "total", json_real(m->total));
    json_object_set_new(o, "activations_full", json_real(m->activations_full));
    json_object_set_new(o, "activations_recompute", json_real(m->activations_recompute));
    return o;
}

static json_t *num_or_null(double v) { return v < 0 ? json_null() : json_real(v); }

json_t *fl_plan_report_json(const fl_plan_report *r) {
    const fl_plan_request *rq = &r->rq;
    json_t *root = json_object();
    json_object_set_new(root, "tool", json_string("fastlora plan"));
    json_t *model = json_object();
    json_object_set_new(model, "name", json_string(r->model_label));
    json_object_set_new(model, "total_params", json_integer(fl_config_total_params(&rq->cfg)));
    json_object_set_new(model, "matmul_params", json_integer(fl_config_matmul_params(&rq->cfg)));
    json_object_set_new(model, "lora_params", json_integer((json_int_t)fl_lora_param_count(&rq->cfg, &rq->lc)));
    json_object_set_new(root, "model", model);
    json_t *req = json_object();
    json_object_set_new(req, "target", json_string(rq->target == FL_TARGET_CUDA ? "cuda" : "cpu"));
    json_object_set_new(req, "batch", json_integer(rq->batch));
    json_object_set_new(req, "seq", json_integer(rq->seq));
    json_object_set_new(req, "rank", json_integer(rq->lc.rank));
    json_object_set_new(req, "alpha", json_real(rq->lc.alpha));
    json_object_set_new(req, "targets", json_string(rq->targets));
    json_object_set_new(req, "recompute", json_string(rq->recompute == FL_RECOMPUTE_ON ? "on"
                                                      : rq->recompute == FL_RECOMPUTE_OFF ? "off" : "auto"));
    json_object_set_new(req, "quant", json_string(rq->quant == FL_QUANT_NF4 ? "nf4" : "none"));
    json_object_set_new(req, "tokens", rq->tokens > 0 ? json_real(rq->tokens) : json_null());
    json_object_set_new(req, "epochs", json_real(rq->epochs));
    json_object_set_new(req, "gpus", json_integer(rq->gpus));
    json_object_set_new(req, "tokens_note", json_string(r->tokens_note));
    json_object_set_new(req, "flops_per_step", json_real(fl_model_flops_per_step(&rq->cfg, &rq->lc, rq->batch, rq->seq)));
    json_object_set_new(root, "request", req);
    fl_plan_memory m0 = fl_plan_memory_compute(&rq->cfg, &rq->lc, rq->batch, rq->seq, rq->target, quant_mode(rq));
    json_object_set_new(root, "memory", memory_json(&m0));
    json_t *cal = json_object();
    json_object_set_new(cal, "records", json_integer(r->cal ? r->cal->n : 0));
    json_object_set_new(cal, "skipped", json_integer(r->cal ? r->cal->n_skipped : 0));
    json_object_set_new(cal, "cuda_records", json_integer(r->cal ? r->cal->n_cuda : 0));
    json_object_set_new(cal, "cuda_efficiency", json_real(r->cal && r->cal->n_cuda ? r->cal->cuda_eff : FL_PLAN_DEFAULT_COMPUTE_EFF));
    json_object_set_new(cal, "default_efficiency", json_real(FL_PLAN_DEFAULT_COMPUTE_EFF));
    json_object_set_new(cal, "bandwidth_efficiency", json_real(FL_PLAN_DEFAULT_BW_EFF));
    json_object_set_new(cal, "notes", json_string(r->cal ? r->cal->notes : ""));
    json_object_set_new(root, "calibration", cal);
    json_t *gpus = json_array();
    for (int i = 0; i < r->n; i++) {
        const fl_plan_result *x = &r->res[i];
        json_t *g = json_object();
        json_object_set_new(g, "name", json_string(x->gpu->name));
        json_object_set_new(g, "short_name", json_string(x->gpu->short_name));
        json_object_set_new(g, "usable_bytes", json_real(x->usable_bytes));
        json_object_set_new(g, "fits", json_boolean(x->fits));
        json_object_set_new(g, "fits_requested", json_boolean(x->fits_requested));
        json_object_set_new(g, "max_batch", json_integer(x->max_batch));
        json_object_set_new(g, "max_batch_recompute", json_integer(x->max_batch_recompute));
        json_object_set_new(g, "recompute", json_boolean(x->recompute));
        json_object_set_new(g, "recompute_needed", json_boolean(x->recompute_needed));
        json_object_set_new(g, "micro_batch", json_integer(x->micro_batch));
        json_object_set_new(g, "grad_accum", json_integer(x->grad_accum));
        json_object_set_new(g, "memory", memory_json(&x->mem));
        json_t *t = json_object();
        json_object_set_new(t, "train_tok_s", x->fits ? json_real(x->tok_s) : json_null());
        json_object_set_new(t, "measured", json_boolean(x->measured));
        json_object_set_new(t, "source", json_string(x->tok_s_source));
        json_object_set_new(t, "step_s", json_real(x->step.step_s));
        json_object_set_new(t, "gemm_s", json_real(x->step.gemm_s));
        json_object_set_new(t, "gemm_memory_bound_s", json_real(x->step.gemm_membound_s));
        json_object_set_new(t, "attention_s", json_real(x->step.attn_s));
        json_object_set_new(t, "elementwise_s", json_real(x->step.elementwise_s));
        json_object_set_new(t, "overhead_s", json_real(x->step.overhead_s));
        json_object_set_new(t, "kernels", json_integer(x->step.kernels));
        json_object_set_new(t, "flops_per_step", json_real(x->step.gemm_flops + x->step.attn_flops));
        json_object_set_new(g, "throughput", t);
        char when[96];
        fl_plan_format_duration(x->time_s, 1, when, sizeof when);
        json_object_set_new(g, "time_s", num_or_null(x->time_s));
        json_object_set_new(g, "time_human", x->time_s > 0 ? json_string(when) : json_null());
        json_object_set_new(g, "price_usd_hr", num_or_null(x->gpu->price_usd_hr));
        json_object_set_new(g, "cost_usd", num_or_null(x->cost_usd));
        if (rq->gpus > 1 && x->fits) {
            json_object_set_new(g, "tok_s_one_gpu", json_real(x->tok_s_one));
            json_object_set_new(g, "allreduce_s", json_real(x->allreduce_s));
            json_object_set_new(g, "scaling", json_real(x->scaling));
            json_object_set_new(g, "link", json_string(x->link));
        }
        json_object_set_new(g, "note", json_string(x->note));
        json_array_append_new(gpus, g);
    }
    json_object_set_new(root, "gpus", gpus);
    int *idx = fl_calloc((size_t)r->n + 1, sizeof(int));
    json_t *rank = json_object(), *bt = json_array(), *bc = json_array();
    int n = fl_plan_rank_by_time(r, idx);
    for (int k = 0; k < n; k++) json_array_append_new(bt, json_string(r->res[idx[k]].gpu->name));
    n = fl_plan_rank_by_cost(r, idx);
    for (int k = 0; k < n; k++) json_array_append_new(bc, json_string(r->res[idx[k]].gpu->name));
    json_object_set_new(rank, "by_time", bt);
    json_object_set_new(rank, "by_cost", bc);
    json_object_set_new(root, "ranking", rank);
    free(idx);
    char rec[2048];
    fl_plan_recommend(r, rec, sizeof rec);
    json_object_set_new(root, "recommendation", json_string(rec));
    return root;
}

/* ---- HTML ------------------------------------------------------------------------------------ */

static void esc(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

/* A horizontal bar chart: one bar per row (value < 0: no bar, `missing` text instead). */
static void svg_bars(FILE *f, const char *title, int n, const char *const *labels, const double *values,
                     const char *const *colors, const char *const *texts, const char *missing) {
    double max = 0;
    for (int i = 0; i < n; i++) if (values[i] > max) max = values[i];
    if (max <= 0) max = 1;
    int row = 22, left = 130, width = 460, h = n * row + 34;
    fprintf(f, "<h3>");
    esc(f, title);
    fprintf(f, "</h3>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n", left + width + 200, h);
    for (int i = 0; i < n; i++) {
        int y = 10 + i * row;
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", left - 6, y + 14);
        esc(f, labels[i]);
        fprintf(f, "</text>\n");
        if (values[i] < 0) {
            fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#999\">%s</text>\n", left + 4, y + 14, missing);
            continue;
        }
        double w = values[i] / max * width;
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n", left, y + 2, w, row - 6,
                colors[i]);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\">", left + w + 4, y + 14);
        esc(f, texts[i]);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "</svg>\n");
}

/* Stacked memory bars per GPU with the usable memory as a tick. */
static void svg_memory(FILE *f, const fl_plan_report *r) {
    static const char *palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
                                    "#ff9da7", "#9c755f"};
    static const char *labels[] = {
#define X(field, label) label,
        FL_PLAN_MEM_CATEGORIES(X)
#undef X
    };
    double max = 0;
    for (int i = 0; i < r->n; i++) {
        if (r->res[i].mem.total > max) max = r->res[i].mem.total;
        if (r->res[i].usable_bytes > max) max = r->res[i].usable_bytes;
    }
    if (max <= 0) max = 1;
    int row = 22, left = 130, width = 560, h = r->n * row + 60;
    fprintf(f, "<h3>Memory per GPU (at its micro-batch) against usable memory (black tick)</h3>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n", left + width + 120, h);
    for (int i = 0; i < r->n; i++) {
        const fl_plan_result *x = &r->res[i];
        int y = 10 + i * row;
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", left - 6, y + 14);
        esc(f, x->gpu->short_name);
        fprintf(f, "</text>\n");
        double at = left, vals[] = {
#define X(field, label) x->mem.field,
            FL_PLAN_MEM_CATEGORIES(X)
#undef X
        };
        for (size_t c = 0; c < sizeof vals / sizeof vals[0]; c++) {
            double w = vals[c] / max * width;
            if (w <= 0) continue;
            fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>%s: %.2f GiB</title></rect>\n",
                    at, y + 2, w, row - 6, palette[c % 9], labels[c], vals[c] / 1073741824.0);
            at += w;
        }
        double ux = left + x->usable_bytes / max * width;
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#000\" stroke-width=\"2\"/>\n", ux, ux, y,
                y + row - 2);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" fill=\"%s\">%.1f / %.1f GiB%s</text>\n", (at > ux ? at : ux) + 4, y + 14,
                x->fits ? "#333" : "#c00", x->mem.total / 1073741824.0, x->usable_bytes / 1073741824.0,
                x->fits ? "" : " (does not fit)");
    }
    int ly = 10 + r->n * row + 14, lx = left;
    for (size_t c = 0; c < sizeof labels / sizeof labels[0]; c++) {
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"%d\" "
                   "font-size=\"10\">%s</text>\n", lx, ly, palette[c % 9], lx + 13, ly + 9, labels[c]);
        lx += 13 + (int)strlen(labels[c]) * 5 + 12;
        if (lx > left + width - 60) { lx = left; ly += 14; }
    }
    fprintf(f, "</svg>\n");
}

int fl_plan_report_html(const fl_plan_report *r, const char *path) {
    fl_atomic_file af;
    FL_TRY(fl_atomic_file_open(&af, path));
    FILE *f = af.fp;
    const fl_plan_request *rq = &r->rq;
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>fastlora plan: ");
    esc(f, r->model_label);
    fprintf(f, "</title>\n<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}"
               "table{border-collapse:collapse;font-size:13px}td,th{border-bottom:1px solid #ddd;padding:3px 8px;"
               "text-align:right}td:first-child,th:first-child{text-align:left}.rec{background:#f4f8ff;padding:1em;"
               "border-left:4px solid #4e79a7}.small{color:#666;font-size:12px}</style></head><body>\n");
    fprintf(f, "<h1>fastlora plan: ");
    esc(f, r->model_label);
    fprintf(f, "</h1>\n<p>LoRA r=%d, alpha %g on ", rq->lc.rank, rq->lc.alpha);
    esc(f, rq->targets);
    fprintf(f, "; batch %d &times; seq %d; recompute %s%s", rq->batch, rq->seq,
            rq->recompute == FL_RECOMPUTE_ON ? "on" : rq->recompute == FL_RECOMPUTE_OFF ? "off" : "auto",
            rq->quant == FL_QUANT_NF4 ? "; frozen projections NF4" : "");
    if (rq->tokens > 0) {
        fprintf(f, "; %.4g tokens &times; %g epochs (", rq->tokens, rq->epochs);
        esc(f, r->tokens_note);
        fprintf(f, ")");
    }
    fprintf(f, ".</p>\n");
    char rec[2048];
    fl_plan_recommend(r, rec, sizeof rec);
    fprintf(f, "<p class=\"rec\">");
    esc(f, rec);
    fprintf(f, "</p>\n");
    int n = r->n;
    const char **labels = fl_calloc((size_t)n + 1, sizeof(char *)), **colors = fl_calloc((size_t)n + 1, sizeof(char *));
    const char **texts = fl_calloc((size_t)n + 1, sizeof(char *));
    char (*tbuf)[96] = fl_calloc((size_t)n + 1, sizeof *tbuf);
    double *vals = fl_calloc((size_t)n + 1, sizeof(double));
    for (int i = 0; i < n; i++) {
        const fl_plan_result *x = &r->res[i];
        labels[i] = x->gpu->short_name;
        colors[i] = x->measured ? "#59a14f" : "#4e79a7";
        vals[i] = x->fits ? x->tok_s : -1;
        snprintf(tbuf[i], sizeof tbuf[i], "%.0f tok/s%s", x->tok_s, x->measured ? " (measured)" : "");
        texts[i] = tbuf[i];
    }
    svg_bars(f, "Train tokens per second (blue: model, green: measured)", n, labels, vals, colors, texts,
             "does not fit");
    if (rq->tokens > 0) {
        for (int i = 0; i < n; i++) {
            const fl_plan_result *x = &r->res[i];
            vals[i] = x->fits ? x->time_s / 3600.0 : -1;
            fl_plan_format_duration(x->time_s, 1, tbuf[i], sizeof tbuf[i]);
            colors[i] = "#f28e2b";
        }
        svg_bars(f, "Wall time (hours)", n, labels, vals, colors, texts, "does not fit");
        for (int i = 0; i < n; i++) {
            const fl_plan_result *x = &r->res[i];
            vals[i] = x->fits && x->cost_usd >= 0 ? x->cost_usd : -1;
            snprintf(tbuf[i], sizeof tbuf[i], "$%.2f at $%.2f/h", x->cost_usd, x->gpu->price_usd_hr);
            colors[i] = "#e15759";
        }
        svg_bars(f, "Cost (USD, indicative on-demand prices)", n, labels, vals, colors, texts, "no price or does not fit");
    }
    svg_memory(f, r);
    fprintf(f, "<h3>Table</h3>\n<table><tr><th>GPU</th><th>memory GiB</th><th>usable GiB</th><th>fits</th>"
               "<th>max B</th><th>max B (recompute)</th><th>tok/s</th><th>source</th><th>time</th><th>cost</th>"
               "<th>note</th></tr>\n");
    for (int i = 0; i < n; i++) {
        const fl_plan_result *x = &r->res[i];
        char when[96];
        fl_plan_format_duration(x->time_s, 1, when, sizeof when);
        fprintf(f, "<tr><td>");
        esc(f, x->gpu->name);
        fprintf(f, "</td><td>%.2f</td><td>%.1f</td><td>%s</td><td>%d</td><td>%d</td><td>%s%.0f</td><td>", x->mem.total / 1073741824.0,
                x->usable_bytes / 1073741824.0, !x->fits ? "no" : x->recompute ? "recompute" : x->grad_accum > 1 ? "accumulate" : "yes",
                x->max_batch, x->max_batch_recompute, x->fits ? "" : "-", x->fits ? x->tok_s : 0);
        esc(f, x->tok_s_source);
        fprintf(f, "</td><td>%s</td><td>", x->time_s > 0 ? when : "");
        if (x->cost_usd >= 0) fprintf(f, "$%.2f", x->cost_usd);
        fprintf(f, "</td><td>");
        esc(f, x->note);
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</table>\n<p class=\"small\">Memory: the engine's allocations (frozen weights at bf16, LoRA f32 "
               "params/grads/AdamW + bf16 copy, the activation table, LM-head chunk, cuBLASLt workspace and staging) "
               "plus an assumed %.0f MiB CUDA context. Recompute is a projection. Speed: roofline model of the engine "
               "(GEMMs at a calibrated fraction of dense bf16 peak, memory-bound kernels at %.0f%% of bandwidth, "
               "%.0f &micro;s per kernel launch). GPU data: data/gpus.csv, sources in data/GPUS-SOURCES.md. See "
               "docs/PLAN.md.</p>\n</body></html>\n",
            FL_PLAN_CUDA_CONTEXT_BYTES / 1048576.0, FL_PLAN_DEFAULT_BW_EFF * 100, FL_PLAN_CUDA_LAUNCH_US);
    free(labels);
    free(colors);
    free(texts);
    free(tbuf);
    free(vals);
    return fl_atomic_file_commit(&af);
}
