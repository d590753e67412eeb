/* test_train_tfevents.c — `--report-to tensorboard`: the encoder's bytes against hand-computed
 * values (CRC-32C check value, TFRecord framing, an Event protobuf), a run's event file read back
 * here by a small decoder (every record's two CRCs, every scalar equal to metrics.jsonl as a
 * float), a SIGKILLed run's file still reading clean, and — when `import tensorboard` works in
 * $FASTLORA_PYTHON (default python3) — TensorBoard's own EventAccumulator through
 * tools/read_tfevents.py agreeing with metrics.jsonl, across a resume too.
 * Not the metrics themselves (test_train.c). */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_run.h"
#include "common/error.h"
#include "io/file_util.h"
#include "test.h"
#include "train/tfevents.h"

#define FIXTURE_MODEL "tests/fixtures/hf/llama_gqa/model"

TEST(tfevents_crc32c_and_framing_hand_computed) {
    CHECK(fl_crc32c("123456789", 9) == 0xE3069283u); /* the CRC-32C check value */
    CHECK(fl_crc32c("", 0) == 0);
    CHECK(fl_tfrecord_masked_crc("", 0) == 0xa282ead8u); /* rotate(0) + the mask delta */
    /* one Event: wall_time 1.0, step 3, a scalar "a" = 0.5 */
    fl_strbuf ev = {0};
    const char *tags[] = {"a"};
    float values[] = {0.5f};
    fl_tfevent_encode_scalars(&ev, 1.0, 3, 1, tags, values);
    static const unsigned char want[] = {
        0x09, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F, /* field 1 (fixed64): wall_time 1.0 */
        0x10, 0x03,                         /* field 2 (varint): step 3 */
        0x2A, 0x0A,                         /* field 5: summary, 10 bytes */
        0x0A, 0x08,                         /*   Summary.value, 8 bytes */
        0x0A, 0x01, 'a',                    /*     Value.tag "a" */
        0x15, 0, 0, 0, 0x3F,                /*     Value.simple_value 0.5f */
    };
    CHECK_EQ_INT(ev.n, sizeof want);
    CHECK(ev.n == sizeof want && !memcmp(ev.p, want, sizeof want));
    fl_strbuf rec = {0};
    fl_tfrecord_append(&rec, ev.p, ev.n);
    CHECK_EQ_INT(rec.n, 8 + 4 + ev.n + 4);
    unsigned char len8[8] = {(unsigned char)sizeof want};
    uint32_t c1 = fl_tfrecord_masked_crc(len8, 8), c2 = fl_tfrecord_masked_crc(want, sizeof want);
    CHECK(!memcmp(rec.p, len8, 8));
    CHECK(!memcmp(rec.p + 8, &c1, 4) && !memcmp(rec.p + 12 + ev.n, &c2, 4)); /* little-endian host */
    free(ev.p);
    free(rec.p);
}

/* ===== A decoder for what fastlora writes ===== */

typedef struct { char tag[64]; int64_t step; float value; } scalar;
typedef struct { scalar *s; size_t n; int n_records, bad_crc, file_version, text, session_start; int64_t start_step; } events;

static uint64_t varint(const unsigned char **p, const unsigned char *end) {
    uint64_t v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        unsigned char b = *(*p)++;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) break;
    }
    return v;
}

/* Walks the fields of a message; calls back with (field, wire, value bytes / varint). */
static void decode_summary(const unsigned char *p, const unsigned char *end, int64_t step, events *e) {
    while (p < end) {
        uint64_t key = varint(&p, end), n = varint(&p, end);
        if (key != 0x0A) return;
        const unsigned char *v = p, *vend = p + n;
        p = vend;
        scalar s = {.step = step};
        int has_value = 0;
        while (v < vend) {
            uint64_t k = varint(&v, vend);
            if (k == 0x0A) { uint64_t m = varint(&v, vend); snprintf(s.tag, sizeof s.tag, "%.*s", (int)m, v); v += m; }
            else if (k == 0x15) { memcpy(&s.value, v, 4); v += 4; has_value = 1; }
            else if ((k & 7) == 2) { v += varint(&v, vend); e->text += k == 0x42; }
            else return;
        }
        if (has_value) {
            e->s = realloc(e->s, (e->n + 1) * sizeof *e->s);
            e->s[e->n++] = s;
        }
    }
}

static void decode_event(const unsigned char *p, const unsigned char *end, events *e) {
    int64_t step = 0;
    while (p < end) {
        uint64_t key = varint(&p, end);
        if (key == 0x09) p += 8;
        else if (key == 0x10) step = (int64_t)varint(&p, end);
        else if (key == 0x1A) { uint64_t n = varint(&p, end); e->file_version += n == 13 && !memcmp(p, "brain.Event:2", 13); p += n; }
        else if (key == 0x2A) { uint64_t n = varint(&p, end); decode_summary(p, p + n, step, e); p += n; }
        else if (key == 0x3A) { uint64_t n = varint(&p, end); e->session_start++; e->start_step = step; p += n; }
        else return;
    }
}

/* Reads one event file: records until the end (a cut last record is where it stops). */
static void read_events(const char *path, events *e) {
    char *data = NULL;
    size_t len = 0;
    if (fl_file_read_all(path, FL_FILE_DATASET, &data, &len)) return;
    const unsigned char *p = (const unsigned char *)data, *end = p + len;
    while (end - p >= 12) {
        uint64_t n = 0;
        for (int i = 0; i < 8; i++) n |= (uint64_t)p[i] << (8 * i);
        uint32_t c;
        memcpy(&c, p + 8, 4);
        if (c != fl_tfrecord_masked_crc(p, 8)) { e->bad_crc++; break; }
        if ((uint64_t)(end - p) < 16 + n) break; /* cut short: the writer was killed mid-record */
        memcpy(&c, p + 12 + n, 4);
        if (c != fl_tfrecord_masked_crc(p + 12, n)) { e->bad_crc++; break; }
        decode_event(p + 12, p + 12 + n, e);
        e->n_records++;
        p += 16 + n;
    }
    free(data);
}

/* The one event file in DIR/runs (NULL when not exactly one). */
static char *event_file(const char *out) {
    char dir[600], *found = NULL;
    snprintf(dir, sizeof dir, "%s/runs", out);
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *de; d && (de = readdir(d));)
        if (!strncmp(de->d_name, "events.out.tfevents.", 20)) {
            n++;
            free(found);
            found = fl_path_join(dir, de->d_name);
        }
    if (d) closedir(d);
    if (n != 1) { free(found); return NULL; }
    return found;
}

/* Whether every metrics.jsonl number (loss, lr, grad_norm, tok_per_s, epoch, eval_loss) is a scalar
 * of *e at its step, as a float; returns how many were compared. */
static int compare_with_metrics(const char *out, const events *e, int *mismatch) {
    char path[600];
    snprintf(path, sizeof path, "%s/metrics.jsonl", out);
    FILE *f = fopen(path, "r");
    char line[1024];
    int n = 0;
    static const char *const keys[][2] = {{"loss", "train/loss"}, {"lr", "train/learning_rate"},
                                          {"grad_norm", "train/grad_norm"}, {"tok_per_s", "train/tok_per_s"},
                                          {"epoch", "train/epoch"}, {"eval_loss", "eval/loss"}};
    while (f && fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        int64_t step = json_integer_value(json_object_get(o, "step"));
        for (size_t k = 0; k < 6; k++) {
            json_t *v = json_object_get(o, keys[k][0]);
            if (!json_is_number(v)) continue;
            int found = 0;
            for (size_t i = 0; i < e->n; i++)
                if (e->s[i].step == step && !strcmp(e->s[i].tag, keys[k][1])) found = e->s[i].value == (float)json_number_value(v);
            *mismatch += !found;
            n++;
        }
        json_decref(o);
    }
    if (f) fclose(f);
    return n;
}

static void run_done(events *e, char *file, char *dir, char *data) {
    free(e->s);
    free(file);
    cr_remove_tree(dir);
    free(data);
    free(dir);
}

#define COMMON "--seq 16 --batch 2 --max-steps 6 --rank 4 --alpha 8 --lr 0.01 --dtype f32 --log-every 0 " \
               "--eval-every 2 --eval-frac 0.2 --report-to tensorboard"

TEST(tfevents_run_scalars_equal_metrics_jsonl) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    char *dir = cr_temp_dir(), *data = cr_token_data(dir, "d.tokens", 30, 0), args[2048], out[8192];
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/run " COMMON, FIXTURE_MODEL, data, dir);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    snprintf(args, sizeof args, "%s/run", dir);
    char *file = event_file(args);
    CHECK_MSG(file, "expected one event file in %s/runs", args);
    events e = {0};
    if (file) read_events(file, &e);
    CHECK_EQ_INT(e.bad_crc, 0);
    CHECK_EQ_INT(e.file_version, 1);
    CHECK_EQ_INT(e.text, 1); /* the options */
    CHECK_EQ_INT(e.n, 6 * 5 + 4); /* 6 steps x 5 train scalars + eval at 0, 2, 4, 6 */
    int mismatch = 0;
    CHECK_EQ_INT(compare_with_metrics(args, &e, &mismatch), 6 * 5 + 4);
    CHECK_EQ_INT(mismatch, 0);
    run_done(&e, file, dir, data);
}

/* SIGKILL mid-run (while writing its 2nd checkpoint): every record in the file is whole */
TEST(tfevents_killed_run_leaves_a_readable_file) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    char *dir = cr_temp_dir(), *data = cr_token_data(dir, "d.tokens", 30, 0), args[2048], out[8192];
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/run --save-every 2 " COMMON, FIXTURE_MODEL, data, dir);
    CHECK_EQ_INT(cr_run(out, sizeof out, "FASTLORA_TEST_CRASH_IN_CHECKPOINT=2", args), 128 + 9);
    snprintf(args, sizeof args, "%s/run", dir);
    char *file = event_file(args);
    events e = {0};
    if (file) read_events(file, &e);
    CHECK(file && e.bad_crc == 0 && e.n >= 4 * 5);
    int mismatch = 0;
    CHECK(compare_with_metrics(args, &e, &mismatch) > 0);
    CHECK_EQ_INT(mismatch, 0);
    run_done(&e, file, dir, data);
}

/* TensorBoard's own reader (tools/read_tfevents.py): every metrics.jsonl scalar, also after a
 * kill and a --resume (the new file's SessionLog START drops the first file's later steps). */
TEST(tfevents_tensorboard_reader_agrees) {
    if (!fl_test_bin()) SKIP("FASTLORA_BIN not set");
    const char *py = getenv("FASTLORA_PYTHON") ? getenv("FASTLORA_PYTHON") : "python3";
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s -c 'import tensorboard' >/dev/null 2>&1", py);
    if (system(cmd) != 0) SKIP("no tensorboard in $FASTLORA_PYTHON (pip install tensorboard)");
    char *dir = cr_temp_dir(), *data = cr_token_data(dir, "d.tokens", 30, 0), args[2048], out[8192];
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/run --save-every 2 " COMMON, FIXTURE_MODEL, data, dir);
    CHECK_EQ_INT(cr_run(out, sizeof out, "FASTLORA_TEST_CRASH_IN_CHECKPOINT=2", args), 128 + 9);
    snprintf(args, sizeof args, "train --model %s --data %s --out %s/run --save-every 2 --resume %s/run " COMMON,
             FIXTURE_MODEL, data, dir, dir);
    CHECK_EQ_INT(cr_run(out, sizeof out, NULL, args), 0);
    snprintf(cmd, sizeof cmd, "%s tools/read_tfevents.py %s/run/runs > %s/tb.json", py, dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/tb.json", dir);
    json_t *tb = json_load_file(cmd, 0, NULL), *scalars = json_object_get(tb, "scalars");
    CHECK(tb != NULL);
    /* rebuild an events list from TensorBoard's view and compare as above */
    events e = {0};
    const char *tag;
    json_t *list;
    json_object_foreach(scalars, tag, list) {
        size_t i;
        json_t *pt;
        json_array_foreach(list, i, pt) {
            e.s = realloc(e.s, (e.n + 1) * sizeof *e.s);
            scalar s = {.step = json_integer_value(json_array_get(pt, 0)), .value = (float)json_number_value(json_array_get(pt, 1))};
            snprintf(s.tag, sizeof s.tag, "%s", tag);
            e.s[e.n++] = s;
        }
    }
    CHECK_EQ_INT(e.n, 6 * 5 + 4); /* no step twice: the killed run's steps after 2 were dropped */
    int mismatch = 0;
    snprintf(cmd, sizeof cmd, "%s/run", dir);
    CHECK_EQ_INT(compare_with_metrics(cmd, &e, &mismatch), 6 * 5 + 4);
    CHECK_EQ_INT(mismatch, 0);
    CHECK(json_is_string(json_object_get(json_object_get(tb, "text"), "options")));
    CHECK_STR_CONTAINS(json_string_value(json_object_get(json_object_get(tb, "text"), "options")), "\"report-to\": \"tensorboard\"");
    json_decref(tb);
    run_done(&e, NULL, dir, data);
}
