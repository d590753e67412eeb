/* cmd_gpus.c — `fastlora gpus`: the GPU catalog (data/gpus.csv, plus a user CSV) as a table or
 * JSON, filtered by memory and architecture and sorted by any column. TFLOPS are dense rates.
 * Not the planner (`fastlora plan`). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/commands.h"
#include "common/args.h"
#include "common/error.h"
#include "plan/gpu_catalog.h"

static int sort_col, sort_desc;

static int cmp_gpu(const void *a, const void *b) {
    const fl_gpu_spec *x = a, *y = b;
    int r;
    if (fl_gpu_column_is_text(sort_col)) {
        r = strcasecmp(fl_gpu_column_text(x, sort_col), fl_gpu_column_text(y, sort_col));
    } else {
        double u = fl_gpu_column_number(x, sort_col), v = fl_gpu_column_number(y, sort_col);
        if (u < 0 && v >= 0) return 1;   /* unknown last, either direction */
        if (v < 0 && u >= 0) return -1;
        r = (u > v) - (u < v);
    }
    return sort_desc ? -r : r;
}

static void cell_num(char *buf, size_t cap, double v, const char *fmt) {
    if (v < 0) snprintf(buf, cap, "?");
    else if (v == 0) snprintf(buf, cap, "-");
    else snprintf(buf, cap, fmt, v);
}

static void print_table(const fl_gpu_spec *g, int n) {
    printf("%-14s %-20s %5s %7s %7s %7s %7s %7s %7s %5s %6s %-4s %s\n", "GPU", "arch", "VRAM", "usable", "BW GB/s",
           "BF16", "FP16", "FP8", "TF32", "TDP", "$/h", "ECC", "use / interconnect");
    printf("%-14s %-20s %5s %7s %7s %7s %7s %7s %7s %5s %6s %-4s\n", "", "", "GB", "GiB", "", "TFLOPS", "dense", "dense",
           "dense", "W", "", "");
    for (int i = 0; i < n; i++) {
        char usable[16], bf16[16], fp16[16], fp8[16], tf32[16], tdp[16], price[16], ecc[8];
        cell_num(usable, sizeof usable, g[i].usable_mib < 0 ? -1 : g[i].usable_mib / 1024.0, "%.1f");
        cell_num(bf16, sizeof bf16, g[i].bf16_dense_tflops, "%.0f");
        cell_num(fp16, sizeof fp16, g[i].fp16_dense_tflops, "%.0f");
        cell_num(fp8, sizeof fp8, g[i].fp8_dense_tflops, "%.0f");
        cell_num(tf32, sizeof tf32, g[i].tf32_dense_tflops, "%.0f");
        cell_num(tdp, sizeof tdp, g[i].tdp_w, "%.0f");
        cell_num(price, sizeof price, g[i].price_usd_hr, "%.2f");
        snprintf(ecc, sizeof ecc, "%.3s", g[i].ecc[0] ? g[i].ecc : "?");
        printf("%-14.14s %-20.20s %5.0f %7s %7.0f %7s %7s %7s %7s %5s %6s %-4s %.34s | %.34s\n", g[i].short_name,
               g[i].arch, g[i].vram_gb, usable, g[i].mem_bw_gbs, bf16, fp16, fp8, tf32, tdp, price, ecc,
               g[i].target_use, g[i].interconnect);
    }
    printf("\n%d GPU%s. TFLOPS are dense tensor-core rates ('-': no such path); 'usable' is the memory the driver\n"
           "reports; prices are indicative on-demand $/GPU-hour ('?': unknown). Sources: data/GPUS-SOURCES.md.\n",
           n, n == 1 ? "" : "s");
}

static json_t *gpu_json(const fl_gpu_spec *g) {
    json_t *o = json_object();
    for (int c = 0; c < fl_gpu_column_count(); c++) {
        const char *name = fl_gpu_column_name(c);
        if (fl_gpu_column_is_text(c)) {
            json_object_set_new(o, name, json_string(fl_gpu_column_text(g, c)));
        } else {
            double v = fl_gpu_column_number(g, c);
            json_object_set_new(o, name, v < 0 ? json_null() : json_real(v));
        }
    }
    json_object_set_new(o, "usable_bytes", json_real(fl_gpu_usable_bytes(g)));
    json_object_set_new(o, "origin", json_string(g->origin));
    return o;
}

int cmd_gpus(int argc, char **argv) {
    const char *arch = NULL, *sort = NULL, *catalog = NULL;
    float min_vram = 0;
    int json = 0, reverse = 0;
    const fl_option options[] = {
        {"min-vram", FL_OPT_FLOAT, &min_vram, "only GPUs with at least this many GB", FL_RANGE(0, 1e9)},
        {"arch", FL_OPT_STRING, &arch, "only this architecture (substring, e.g. hopper, ada, sm_90)", FL_NO_RANGE},
        {"sort", FL_OPT_STRING, &sort, "sort by a column (numbers high first, text A-Z): vram_gb, mem_bw_gbs, "
                                       "bf16_dense_tflops, price_usd_hr, tdp_w, name, ...", FL_NO_RANGE},
        {"reverse", FL_OPT_FLAG, &reverse, "reverse the sort", FL_NO_RANGE},
        {"json", FL_OPT_FLAG, &json, "print JSON (every column) instead of the table", FL_NO_RANGE},
        {"catalog", FL_OPT_STRING, &catalog, "a CSV of your own: rows add GPUs or override fields (prices too)", FL_NO_RANGE},
    };
    int rc = fl_args_parse("gpus", argc, argv, options, (int)(sizeof options / sizeof options[0]),
                           "usage: fastlora gpus [--min-vram GB] [--arch NAME] [--sort COLUMN] [--json] [--catalog FILE]");
    if (rc) return rc < 0 ? 0 : rc;
    if (sort) {
        sort_col = fl_gpu_column_index(sort);
        if (sort_col < 0) {
            fprintf(stderr, "fastlora: gpus: --sort: unknown column '%s' (expected one of:", sort);
            for (int c = 0; c < fl_gpu_column_count(); c++) fprintf(stderr, "%s %s", c ? "," : "", fl_gpu_column_name(c));
            fprintf(stderr, ")\n");
            return 2;
        }
        sort_desc = !fl_gpu_column_is_text(sort_col);
        if (reverse) sort_desc = !sort_desc;
    }
    fl_gpu_catalog cat;
    int status = fl_gpu_catalog_load_default(&cat);
    if (!status && catalog) status = fl_gpu_catalog_merge_file(&cat, catalog);
    if (status) {
        fprintf(stderr, "fastlora: %s\n", fl_last_error());
        fl_gpu_catalog_free(&cat);
        return status;
    }
    fl_gpu_spec *sel = fl_calloc((size_t)cat.n + 1, sizeof *sel);
    int n = 0;
    for (int i = 0; i < cat.n; i++) {
        const fl_gpu_spec *g = &cat.gpus[i];
        if (g->vram_gb < min_vram) continue;
        if (arch && !strcasestr(g->arch, arch) && !strcasestr(g->sm, arch)) continue;
        sel[n++] = *g;
    }
    if (sort) qsort(sel, (size_t)n, sizeof *sel, cmp_gpu);
    else if (reverse)
        for (int i = 0; i < n / 2; i++) { fl_gpu_spec t = sel[i]; sel[i] = sel[n - 1 - i]; sel[n - 1 - i] = t; }
    if (json) {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++) json_array_append_new(arr, gpu_json(&sel[i]));
        char *s = json_dumps(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", s);
        free(s);
        json_decref(arr);
    } else {
        print_table(sel, n);
    }
    free(sel);
    fl_gpu_catalog_free(&cat);
    return 0;
}
