/* board.c — leaderboards from benchmark records (see board.h): grouping, ranking, Markdown, HTML. */
#include "bench/board.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

static const char *const TITLE_LINE =
    "Training throughput in tokens per second: LoRA on a fixed batch, the number that decides whether a fine-tune is "
    "an evening or a week.";
static const char *const UNITS_LINE = "Measured in train tok/s. Longer is faster.";
static const char *const CLOSING_LINE =
    "Every number is a first-party run on our own bench. Cards missing from a board have not been measured on that "
    "model yet, or cannot fit it.";

/* ---- building ---------------------------------------------------------------------------------- */

void fl_board_row_label(const fl_bench_record *r, char *out, size_t cap) {
    int cpu = !strcmp(r->device_kind, "cpu");
    int peer = strcmp(r->tool, "fastlora") != 0;
    char extra[192] = "";
    size_t n = 0;
    if (cpu && r->threads > 0)
        n += (size_t)snprintf(extra + n, sizeof extra - n, "%d thread%s", r->threads, r->threads == 1 ? "" : "s");
    if (peer && n < sizeof extra) n += (size_t)snprintf(extra + n, sizeof extra - n, "%s%s", n ? ", " : "", r->tool);
    if ((peer || cpu) && n < sizeof extra) snprintf(extra + n, sizeof extra - n, "%s%s", n ? ", " : "", r->dtype);
    if (extra[0]) snprintf(out, cap, "%s (%s)", r->device, extra);
    else snprintf(out, cap, "%s", r->device);
}

/* Figures compare at the printed precision (0.1 tok/s), so a tie is what a reader sees as one. */
static long long printed_tenths(double v) { return llround(v * 10.0); }

static int row_cmp(const void *pa, const void *pb) {
    const fl_board_row *a = pa, *b = pb;
    long long x = printed_tenths(a->rec.train_tok_s), y = printed_tenths(b->rec.train_tok_s);
    if (x != y) return x > y ? -1 : 1;
    return strcmp(a->label, b->label);
}

void fl_board_build(fl_board_set *set, const fl_bench_record_list *records, const fl_reference_board *ref, int batch,
                    int seq) {
    memset(set, 0, sizeof *set);
    set->with_reference = ref != NULL;
    if (ref) snprintf(set->reference_path, sizeof set->reference_path, "%s", ref->path);
    set->boards = fl_calloc(records->n ? records->n : 1, sizeof *set->boards);
    for (size_t i = 0; i < records->n; i++) {
        const fl_bench_record *r = &records->items[i];
        if (r->interrupted || (batch > 0 && r->batch != batch) || (seq > 0 && r->seq != seq)) {
            set->n_records_skipped++;
            continue;
        }
        set->n_records_used++;
        fl_board *board = NULL;
        for (size_t b = 0; b < set->n && !board; b++)
            if (!strcmp(set->boards[b].weights, r->weights)) board = &set->boards[b];
        if (!board) {
            board = &set->boards[set->n++];
            snprintf(board->weights, sizeof board->weights, "%s", r->weights);
            board->rows = fl_calloc(records->n, sizeof *board->rows);
        }
        char label[sizeof board->rows->label];
        fl_board_row_label(r, label, sizeof label);
        fl_board_row *row = NULL;
        for (size_t k = 0; k < board->n && !row; k++)
            if (!strcmp(board->rows[k].label, label)) row = &board->rows[k];
        if (!row) {
            row = &board->rows[board->n++];
            memcpy(row->label, label, sizeof label);
            row->rec = *r;
        } else if (r->train_tok_s > row->rec.train_tok_s ||
                   (r->train_tok_s == row->rec.train_tok_s && strcmp(r->date, row->rec.date) > 0)) {
            row->rec = *r;
        }
    }
    for (size_t b = 0; b < set->n; b++) {
        fl_board *board = &set->boards[b];
        qsort(board->rows, board->n, sizeof *board->rows, row_cmp);
        for (size_t k = 0; k < board->n; k++) {
            fl_board_row *row = &board->rows[k];
            if (k > 0 && printed_tenths(row->rec.train_tok_s) == printed_tenths(board->rows[k - 1].rec.train_tok_s))
                row->rank = board->rows[k - 1].rank;
            else
                row->rank = (int)k + 1;
            row->reference = ref ? fl_reference_board_find(ref, board->weights, row->rec.device) : -1.0;
        }
    }
}

void fl_board_set_free(fl_board_set *set) {
    for (size_t b = 0; b < set->n; b++) free(set->boards[b].rows);
    free(set->boards);
    memset(set, 0, sizeof *set);
}

static void format_ratio(const fl_board_row *row, char *out, size_t cap) {
    if (row->reference > 0) snprintf(out, cap, "%.2fx", row->rec.train_tok_s / row->reference);
    else snprintf(out, cap, "—");
}

static void format_reference(const fl_board_row *row, char *out, size_t cap) {
    if (row->reference > 0) fl_bench_format_tok_s(row->reference, out, cap);
    else snprintf(out, cap, "—");
}

/* ---- Markdown ---------------------------------------------------------------------------------- */

void fl_board_write_markdown(FILE *out, const fl_board_set *set, int spaced) {
    const char *gap = spaced ? "\n" : "";
    fprintf(out, "%s\n", TITLE_LINE);
    for (size_t b = 0; b < set->n; b++) {
        const fl_board *board = &set->boards[b];
        fprintf(out, "%sWeights: %s\n%s%s\n%s", gap, board->weights, gap, UNITS_LINE, gap);
        if (set->with_reference)
            fprintf(out, "| # | GPU | train tok/s | reference tok/s | ratio |\n|---|---|---|---|---|\n");
        else
            fprintf(out, "| # | GPU | train tok/s |\n|---|---|---|\n");
        for (size_t k = 0; k < board->n; k++) {
            const fl_board_row *row = &board->rows[k];
            char v[32];
            fl_bench_format_tok_s(row->rec.train_tok_s, v, sizeof v);
            fprintf(out, "| %d | %s | %s |", row->rank, row->label, v);
            if (set->with_reference) {
                char rv[32], ratio[32];
                format_reference(row, rv, sizeof rv);
                format_ratio(row, ratio, sizeof ratio);
                fprintf(out, " %s | %s |", rv, ratio);
            }
            fputc('\n', out);
        }
    }
    fprintf(out, "%s%s\n", gap, CLOSING_LINE);
    if (set->with_reference)
        fprintf(out, "%sReference: the published board (%s); ratio = ours / published.\n", gap, set->reference_path);
}

/* ---- HTML -------------------------------------------------------------------------------------- */

static void put_html(FILE *out, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: fputc(*s, out);
        }
    }
}

/* One horizontal bar per row: label | bar (ours) [+ thin bar (published)] | figure; a legend when
 * there is more than one kind of bar. */
static void write_svg_chart(FILE *out, const fl_board *board, int with_reference) {
    const int label_w = 430, bar_w = 400, value_w = 150, row_h = with_reference ? 34 : 26, top = 8;
    int any_peer = 0;
    double max = 0;
    for (size_t k = 0; k < board->n; k++) {
        if (board->rows[k].rec.train_tok_s > max) max = board->rows[k].rec.train_tok_s;
        if (board->rows[k].reference > max) max = board->rows[k].reference;
        any_peer |= strcmp(board->rows[k].rec.tool, "fastlora") != 0;
    }
    if (max <= 0) max = 1;
    int legend = with_reference || any_peer;
    const int width = label_w + bar_w + value_w, height = top * 2 + row_h * (int)board->n + (legend ? 22 : 0);
    fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
                 "aria-label=\"train tok/s, ",
            width, height, width, height);
    put_html(out, board->weights);
    fprintf(out, "\">\n");
    for (size_t k = 0; k < board->n; k++) {
        const fl_board_row *row = &board->rows[k];
        int y = top + row_h * (int)k;
        int peer = strcmp(row->rec.tool, "fastlora") != 0;
        double w = bar_w * row->rec.train_tok_s / max;
        if (w < 1) w = 1;
        char v[32];
        fl_bench_format_tok_s(row->rec.train_tok_s, v, sizeof v);
        fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" class=\"label\">%d. ", label_w - 10, y + 15, row->rank);
        put_html(out, row->label);
        fprintf(out, "</text>\n<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"16\" class=\"%s\"/>\n", label_w, y + 3, w,
                peer ? "peer" : "ours");
        fprintf(out, "<text x=\"%.1f\" y=\"%d\" class=\"value\">%s</text>\n", label_w + w + 6, y + 15, v);
        if (with_reference && row->reference > 0) {
            double rw = bar_w * row->reference / max;
            char rv[32];
            fl_bench_format_tok_s(row->reference, rv, sizeof rv);
            fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"7\" class=\"ref\"/>\n", label_w, y + 22, rw);
            fprintf(out, "<text x=\"%.1f\" y=\"%d\" class=\"refvalue\">%s published</text>\n", label_w + rw + 6, y + 29,
                    rv);
        }
    }
    if (legend) {
        int y = top + row_h * (int)board->n + 6, x = label_w;
        const char *items[3][2] = {{"ours", "fastlora"}, {"peer", "peer (tool named in the row)"}, {"ref", "published board"}};
        int show[3] = {1, any_peer, with_reference};
        for (int i = 0; i < 3; i++) {
            if (!show[i]) continue;
            fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"10\" class=\"%s\"/><text x=\"%d\" y=\"%d\" "
                         "class=\"refvalue\">%s</text>\n",
                    x, y, items[i][0], x + 20, y + 9, items[i][1]);
            x += 40 + 7 * (int)strlen(items[i][1]);
        }
    }
    fprintf(out, "</svg>\n");
}

static void write_html_table(FILE *out, const fl_board *board, int with_reference) {
    fprintf(out, "<table>\n<thead><tr><th>#</th><th>GPU</th><th>train tok/s</th>%s</tr></thead>\n<tbody>\n",
            with_reference ? "<th>reference tok/s</th><th>ratio</th>" : "");
    for (size_t k = 0; k < board->n; k++) {
        const fl_board_row *row = &board->rows[k];
        char v[32];
        fl_bench_format_tok_s(row->rec.train_tok_s, v, sizeof v);
        fprintf(out, "<tr%s><td>%d</td><td>", strcmp(row->rec.tool, "fastlora") ? " class=\"peer\"" : "", row->rank);
        put_html(out, row->label);
        fprintf(out, "</td><td class=\"num\">%s</td>", v);
        if (with_reference) {
            char rv[32], ratio[32];
            format_reference(row, rv, sizeof rv);
            format_ratio(row, ratio, sizeof ratio);
            fprintf(out, "<td class=\"num\">%s</td><td class=\"num\">%s</td>", rv, ratio);
        }
        fprintf(out, "</tr>\n");
    }
    fprintf(out, "</tbody>\n</table>\n");
}

void fl_board_write_html(FILE *out, const fl_board_set *set, const char *generated_note) {
    fprintf(out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<title>fastlora board: train tok/s</title>\n<style>\n"
            "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px auto;max-width:1000px;"
            "color:#1a202c;background:#fff;padding:0 16px}\n"
            "h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 2px}p{margin:4px 0}\n"
            "p.units{color:#4a5568;font-size:14px}\n"
            "table{border-collapse:collapse;margin:8px 0 0;font-size:14px}\n"
            "th,td{border:1px solid #cbd5e0;padding:3px 10px;text-align:left}th{background:#edf2f7}\n"
            "td.num{text-align:right;font-variant-numeric:tabular-nums}tr.peer td{color:#9c4221}\n"
            "svg{display:block;margin:8px 0}svg .label{font-size:12px;fill:#1a202c}"
            "svg .value{font-size:12px;fill:#1a202c;font-weight:600}svg .refvalue{font-size:11px;fill:#4a5568}\n"
            "svg .ours{fill:#2b6cb0}svg .peer{fill:#dd6b20}svg .ref{fill:#a0aec0}\n"
            "footer{margin-top:24px;color:#718096;font-size:12px}body>p{margin-top:16px}\n"
            "</style>\n</head>\n<body>\n");
    fprintf(out, "<h1>Training throughput in tokens per second</h1>\n<p>LoRA on a fixed batch, the number that decides "
                 "whether a fine-tune is an evening or a week.</p>\n");
    for (size_t b = 0; b < set->n; b++) {
        const fl_board *board = &set->boards[b];
        fprintf(out, "<section>\n<h2>Weights: ");
        put_html(out, board->weights);
        fprintf(out, "</h2>\n<p class=\"units\">%s</p>\n", UNITS_LINE);
        write_svg_chart(out, board, set->with_reference);
        write_html_table(out, board, set->with_reference);
        fprintf(out, "</section>\n");
    }
    if (!set->n) fprintf(out, "<p>No records.</p>\n");
    fprintf(out, "<p>%s</p>\n", CLOSING_LINE);
    if (set->with_reference) {
        fprintf(out, "<p>Reference: the published board (");
        put_html(out, set->reference_path);
        fprintf(out, "); ratio = ours / published.</p>\n");
    }
    if (generated_note) {
        fprintf(out, "<footer>");
        put_html(out, generated_note);
        fprintf(out, "</footer>\n");
    }
    fprintf(out, "</body>\n</html>\n");
}
