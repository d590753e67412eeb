/* metrics.c — metrics.jsonl, its TensorBoard twin (tfevents.c) and the SVG loss curve (see metrics.h). */
#include "train/metrics.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "io/file_util.h"

static void push(fl_point **pts, size_t *n, size_t *cap, int step, double v) {
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 256;
        fl_point *np = realloc(*pts, *cap * sizeof *np);
        if (!np) fl_die("out of memory (metrics)");
        *pts = np;
    }
    (*pts)[(*n)++] = (fl_point){step, v};
}

int fl_metrics_open(fl_metrics *mt, const char *out_dir, int keep_upto_step) {
    memset(mt, 0, sizeof *mt);
    char *path = fl_path_join(out_dir, "metrics.jsonl");
    char *kept = NULL;
    size_t kept_len = 0;
    int status = 0;
    if (keep_upto_step >= 0) {
        FILE *in = NULL;
        if (fl_file_exists(path) && (status = fl_file_fopen_read(path, FL_FILE_DATASET, &in))) {
            free(path);
            return status;
        }
        FILE *mem = open_memstream(&kept, &kept_len);
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        while (in && (len = getline(&line, &cap, in)) > 0) {
            json_t *o = json_loadb(line, (size_t)len, 0, NULL);
            json_t *step = o ? json_object_get(o, "step") : NULL;
            if (json_is_integer(step) && json_integer_value(step) <= keep_upto_step) {
                int s = (int)json_integer_value(step);
                json_t *l = json_object_get(o, "loss"), *e = json_object_get(o, "eval_loss");
                if (json_is_number(l)) push(&mt->train, &mt->n_train, &mt->cap_train, s, json_number_value(l));
                if (json_is_number(e)) push(&mt->eval, &mt->n_eval, &mt->cap_eval, s, json_number_value(e));
                fwrite(line, 1, (size_t)len, mem);
                if (line[len - 1] != '\n') fputc('\n', mem);
            }
            json_decref(o);
        }
        free(line);
        if (in) fclose(in);
        fclose(mem);
    }
    status = fl_write_file_atomic(path, kept ? kept : "", kept_len);
    free(kept);
    if (!status) {
        mt->fp = fopen(path, "ab");
        if (!mt->fp) status = fl_input_error("%s: cannot open for appending: %s", path, strerror(errno));
    }
    free(path);
    return status;
}

int fl_metrics_open_tensorboard(fl_metrics *mt, const char *out_dir, int resume_step, const char *options_json) {
    FL_TRY(fl_tfevents_open(&mt->tb, out_dir, resume_step));
    /* Markdown: the JSON as a code block (each line indented by four spaces) */
    fl_strbuf md = {0};
    fl_strbuf_append_str(&md, "    ");
    for (const char *c = options_json; *c; c++) {
        fl_strbuf_append(&md, c, 1);
        if (*c == '\n' && c[1]) fl_strbuf_append_str(&md, "    ");
    }
    int status = fl_tfevents_text(&mt->tb, resume_step < 0 ? 0 : resume_step + 1, "options", md.p);
    free(md.p);
    return status;
}

/* A TensorBoard write that fails (disk full) is said once and stops that file, not the run. */
static void tb_scalars(fl_metrics *mt, int step, int n, const char *const *tags, char (*texts)[32]) {
    if (!mt->tb.fp) return;
    float v[8];
    for (int i = 0; i < n; i++) v[i] = (float)strtod(texts[i], NULL);
    if (fl_tfevents_scalars(&mt->tb, step, n, tags, v)) {
        fprintf(stderr, "fastlora train: %s (TensorBoard logging stopped)\n", fl_last_error());
        fl_tfevents_close(&mt->tb);
    }
}

/* The extra numbers of a line: `, "prefix+name": value` each (9 significant digits), and their
 * TensorBoard scalars under tag_prefix. */
static void write_extra(fl_metrics *mt, int step, const fl_metric_extra *x, const char *prefix, const char *tag_prefix) {
    if (!x) return;
    for (int i = 0; i < x->n; i++) {
        char text[1][32], tag[96];
        snprintf(text[0], 32, "%.9g", x->value[i]);
        if (!isfinite(x->value[i])) snprintf(text[0], 32, "null");
        if (mt->fp) fprintf(mt->fp, ", \"%s%s\": %s", prefix, x->name[i], text[0]);
        snprintf(tag, sizeof tag, "%s%s", tag_prefix, x->name[i]);
        const char *tags[1] = {tag};
        if (isfinite(x->value[i])) tb_scalars(mt, step, 1, tags, text);
    }
}

void fl_metrics_train(fl_metrics *mt, int step, double epoch, double loss, double lr, double grad_norm, size_t tokens,
                      double tok_per_s, const fl_metric_extra *extra) {
    push(&mt->train, &mt->n_train, &mt->cap_train, step, loss);
    /* the numbers as metrics.jsonl writes them; TensorBoard gets the same decimals */
    char t[5][32];
    snprintf(t[0], 32, "%.6f", loss);
    snprintf(t[1], 32, "%.6g", lr);
    snprintf(t[2], 32, "%.6g", grad_norm);
    snprintf(t[3], 32, "%.1f", tok_per_s);
    snprintf(t[4], 32, "%.4f", epoch);
    if (mt->fp) {
        fprintf(mt->fp, "{\"step\": %d, \"epoch\": %s, \"loss\": %s, \"lr\": %s, \"grad_norm\": %s, \"tokens\": %zu, "
                "\"tok_per_s\": %s", step, t[4], t[0], t[1], t[2], tokens, t[3]);
    }
    static const char *const tags[] = {"train/loss", "train/learning_rate", "train/grad_norm", "train/tok_per_s", "train/epoch"};
    tb_scalars(mt, step, 5, tags, t);
    write_extra(mt, step, extra, "", "train/");
    if (mt->fp) {
        fprintf(mt->fp, "}\n");
        fflush(mt->fp);
    }
}

void fl_metrics_eval(fl_metrics *mt, int step, double loss, size_t tokens, const fl_metric_extra *extra) {
    push(&mt->eval, &mt->n_eval, &mt->cap_eval, step, loss);
    char t[1][32];
    snprintf(t[0], 32, "%.6f", loss);
    if (mt->fp) fprintf(mt->fp, "{\"step\": %d, \"eval_loss\": %s, \"eval_tokens\": %zu", step, t[0], tokens);
    static const char *const tags[] = {"eval/loss"};
    tb_scalars(mt, step, 1, tags, t);
    write_extra(mt, step, extra, "eval_", "eval/");
    if (mt->fp) {
        fprintf(mt->fp, "}\n");
        fflush(mt->fp);
    }
}

void fl_metrics_close(fl_metrics *mt) {
    if (mt->fp) fclose(mt->fp);
    fl_tfevents_close(&mt->tb);
    free(mt->train);
    free(mt->eval);
    memset(mt, 0, sizeof *mt);
}

/* ---- SVG --------------------------------------------------------------------------------------- */

/* A "nice" tick step (1, 2 or 5 times a power of ten) giving about n ticks over span. */
static double nice_step(double span, int n) {
    double raw = span / n, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

static void polyline(FILE *f, const fl_point *pts, size_t n, double x0, double xs, double y0, double ys, double ymin,
                     int max_step, const char *color, int dots) {
    if (!n) return;
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", color);
    for (size_t i = 0; i < n; i++)
        if (isfinite(pts[i].value)) fprintf(f, "%.1f,%.1f ", x0 + (pts[i].step) * xs, y0 - (pts[i].value - ymin) * ys);
    fprintf(f, "\"/>\n");
    if (dots)
        for (size_t i = 0; i < n; i++)
            if (isfinite(pts[i].value))
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", x0 + pts[i].step * xs,
                        y0 - (pts[i].value - ymin) * ys, color);
    (void)max_step;
}

int fl_metrics_write_svg(const fl_metrics *mt, const char *path, const char *title) {
    const double W = 800, H = 480, L = 70, R = 20, T = 40, B = 50;
    int max_step = 1;
    double lo = INFINITY, hi = -INFINITY;
    const fl_point *sets[2] = {mt->train, mt->eval};
    size_t counts[2] = {mt->n_train, mt->n_eval};
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < counts[s]; i++) {
            if (sets[s][i].step > max_step) max_step = sets[s][i].step;
            if (!isfinite(sets[s][i].value)) continue;
            if (sets[s][i].value < lo) lo = sets[s][i].value;
            if (sets[s][i].value > hi) hi = sets[s][i].value;
        }
    if (!(lo <= hi)) { lo = 0; hi = 1; }
    if (hi - lo < 1e-6) { lo -= 0.5; hi += 0.5; }
    double ystep = nice_step(hi - lo, 5), ymin = floor(lo / ystep) * ystep, ymax = ceil(hi / ystep) * ystep;
    double xs = (W - L - R) / max_step, ys = (H - T - B) / (ymax - ymin), y0 = H - B;
    fl_atomic_file af;
    FL_TRY(fl_atomic_file_open(&af, path));
    FILE *f = af.fp;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n", W, H, W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%.0f\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">", W / 2);
    for (const char *c = title ? title : "loss"; *c; c++) {
        if (*c == '<') fputs("&lt;", f);
        else if (*c == '>') fputs("&gt;", f);
        else if (*c == '&') fputs("&amp;", f);
        else fputc(*c, f);
    }
    fprintf(f, "</text>\n");
    /* grid and y ticks */
    /* by tick index: y += ystep stops moving when the losses are ~1e17 apart by less than an ulp */
    for (int k = 0; k <= 100 && ymin + k * ystep <= ymax + ystep * 1e-6; k++) {
        double y = ymin + k * ystep, py = y0 - (y - ymin) * ys;
        fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L, py, W - R, py);
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.3g</text>\n", L - 6, py + 4, y);
    }
    double xstep = nice_step(max_step, 8);
    if (xstep < 1) xstep = 1;
    for (double x = 0; x <= max_step + 1e-9; x += xstep) {
        double px = L + x * xs;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#ddd\"/>\n", px, T, px, y0);
        fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%.0f</text>\n", px, y0 + 18, x);
    }
    fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#333\"/>\n", L, T,
            W - L - R, H - T - B);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">step</text>\n", L + (W - L - R) / 2, H - 12);
    fprintf(f, "<text x=\"16\" y=\"%.0f\" text-anchor=\"middle\" transform=\"rotate(-90 16 %.0f)\">loss (nats/token)</text>\n",
            T + (H - T - B) / 2, T + (H - T - B) / 2);
    polyline(f, mt->train, mt->n_train, L, xs, y0, ys, ymin, max_step, "#1f77b4", 0);
    polyline(f, mt->eval, mt->n_eval, L, xs, y0, ys, ymin, max_step, "#ff7f0e", 1);
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#1f77b4\" stroke-width=\"2\"/>"
               "<text x=\"%.0f\" y=\"%.0f\">train</text>\n", W - R - 150, T + 16, W - R - 125, T + 16, W - R - 120, T + 20);
    if (mt->n_eval)
        fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#ff7f0e\" stroke-width=\"2\"/>"
                   "<text x=\"%.0f\" y=\"%.0f\">eval</text>\n", W - R - 75, T + 16, W - R - 50, T + 16, W - R - 45, T + 20);
    fprintf(f, "</svg>\n");
    return fl_atomic_file_commit(&af);
}
