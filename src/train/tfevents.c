/* tfevents.c — TensorBoard event files: CRC-32C, TFRecord framing and the few protobuf messages
 * TensorBoard reads (tfevents.h has the layout). A protobuf field is a varint key
 * (field << 3 | wire type: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32) and its value;
 * nested messages are encoded first, then written with their length.
 * Not a protobuf library: only the fields written here.
 */
#include "train/tfevents.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "io/file_util.h"

/* ===== CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) ===== */

uint32_t fl_crc32c(const void *data, size_t n) {
    static uint32_t table[256];
    static int ready;
    if (!ready) { /* benign race: every thread computes the same table */
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
            table[i] = c;
        }
        ready = 1;
    }
    const uint8_t *p = data;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

uint32_t fl_tfrecord_masked_crc(const void *data, size_t n) {
    uint32_t c = fl_crc32c(data, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static void put_le(fl_strbuf *b, uint64_t v, int bytes) {
    uint8_t t[8];
    for (int i = 0; i < bytes; i++) t[i] = (uint8_t)(v >> (8 * i));
    fl_strbuf_append(b, t, (size_t)bytes);
}

void fl_tfrecord_append(fl_strbuf *out, const void *data, size_t n) {
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)n >> (8 * i));
    fl_strbuf_append(out, len, 8);
    put_le(out, fl_tfrecord_masked_crc(len, 8), 4);
    fl_strbuf_append(out, data, n);
    put_le(out, fl_tfrecord_masked_crc(data, n), 4);
}

/* ===== Protobuf fields ===== */

static void put_varint(fl_strbuf *b, uint64_t v) {
    uint8_t t[10];
    int n = 0;
    do {
        t[n++] = (uint8_t)((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
        v >>= 7;
    } while (v);
    fl_strbuf_append(b, t, (size_t)n);
}

static void put_key(fl_strbuf *b, int field, int wire) { put_varint(b, (uint64_t)field << 3 | (uint64_t)wire); }

static void put_bytes(fl_strbuf *b, int field, const void *data, size_t n) {
    put_key(b, field, 2);
    put_varint(b, n);
    fl_strbuf_append(b, data, n);
}

static void put_message(fl_strbuf *b, int field, fl_strbuf *inner) {
    put_bytes(b, field, inner->p ? inner->p : "", inner->n);
    free(inner->p);
    memset(inner, 0, sizeof *inner);
}

static void put_double(fl_strbuf *b, int field, double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    put_key(b, field, 1);
    put_le(b, u, 8);
}

static void put_float(fl_strbuf *b, int field, float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    put_key(b, field, 5);
    put_le(b, u, 4);
}

/* Event's wall_time and step: the head of every event */
static void put_event_head(fl_strbuf *b, double wall_time, int64_t step) {
    put_double(b, 1, wall_time);
    if (step) { put_key(b, 2, 0); put_varint(b, (uint64_t)step); }
}

void fl_tfevent_encode_scalars(fl_strbuf *out, double wall_time, int64_t step, int n, const char *const *tags,
                               const float *values) {
    fl_strbuf summary = {0}, value = {0};
    for (int i = 0; i < n; i++) {
        put_bytes(&value, 1, tags[i], strlen(tags[i]));
        put_float(&value, 2, values[i]);
        put_message(&summary, 1, &value);
    }
    put_event_head(out, wall_time, step);
    put_message(out, 5, &summary);
}

/* ===== The file ===== */

static double now_seconds(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

static int write_record(fl_tfevents *tb, fl_strbuf *event) {
    fl_strbuf rec = {0};
    fl_tfrecord_append(&rec, event->p ? event->p : "", event->n);
    free(event->p);
    int ok = tb->fp && fwrite(rec.p, 1, rec.n, tb->fp) == rec.n && fflush(tb->fp) == 0;
    free(rec.p);
    return ok ? 0 : fl_input_error("%s: cannot write: %s", tb->path, strerror(errno));
}

/* A fresh run (remove): the event files of the run it replaces go. A resume: returns the latest
 * seconds in the names there, so the new file can sort after them (TensorBoard reads a folder's
 * files in name order, and the SessionLog START must come after what it replaces). */
static long long old_event_files(const char *dir, int remove) {
    DIR *d = opendir(dir);
    long long latest = 0;
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));)
        if (!strncmp(e->d_name, "events.out.tfevents.", 20)) {
            long long t = strtoll(e->d_name + 20, NULL, 10);
            if (t > latest) latest = t;
            if (!remove) continue;
            char *p = fl_path_join(dir, e->d_name);
            unlink(p);
            free(p);
        }
    closedir(d);
    return latest;
}

void fl_tfevents_remove(const char *out_dir) {
    char *dir = fl_path_join(out_dir, "runs");
    old_event_files(dir, 1);
    rmdir(dir); /* when empty */
    free(dir);
}

int fl_tfevents_open(fl_tfevents *tb, const char *out_dir, int resume_step) {
    memset(tb, 0, sizeof *tb);
    char *dir = fl_path_join(out_dir, "runs");
    if (fl_mkdir_p(dir)) { free(dir); return FL_ERR_INPUT; }
    long long latest = old_event_files(dir, resume_step < 0);
    char host[256] = "localhost", name[400];
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = 0;
    for (char *h = host; *h; h++)
        if (*h == '/') *h = '_';
    double t = now_seconds();
    long long name_t = (long long)t > latest ? (long long)t : latest + 1;
    for (int k = 0;; k++) { /* taken (the same pid within a second): the next name */
        snprintf(name, sizeof name, "events.out.tfevents.%010lld.%s.%d.%d", name_t, host, (int)getpid(), k);
        tb->path = fl_path_join(dir, name);
        if (!fl_file_exists(tb->path) || k == 99) break;
        free(tb->path);
    }
    free(dir);
    tb->fp = fopen(tb->path, "wb");
    if (!tb->fp) return fl_input_error("cannot write %s: %s", tb->path, strerror(errno));
    fl_strbuf ev = {0};
    put_event_head(&ev, t, 0);
    put_bytes(&ev, 3, "brain.Event:2", 13);
    FL_TRY(write_record(tb, &ev));
    if (resume_step >= 0) { /* SessionLog START: TensorBoard drops the steps >= this one read before */
        fl_strbuf log = {0};
        put_key(&log, 1, 0);
        put_varint(&log, 1);
        memset(&ev, 0, sizeof ev);
        put_event_head(&ev, t, resume_step + 1);
        put_message(&ev, 7, &log);
        FL_TRY(write_record(tb, &ev));
    }
    return 0;
}

int fl_tfevents_scalars(fl_tfevents *tb, int64_t step, int n, const char *const *tags, const float *values) {
    fl_strbuf ev = {0};
    fl_tfevent_encode_scalars(&ev, now_seconds(), step, n, tags, values);
    return write_record(tb, &ev);
}

int fl_tfevents_text(fl_tfevents *tb, int64_t step, const char *tag, const char *text) {
    fl_strbuf plugin = {0}, meta = {0}, shape = {0}, tensor = {0}, value = {0}, summary = {0}, ev = {0};
    put_bytes(&plugin, 1, "text", 4);
    put_message(&meta, 1, &plugin);
    put_key(&tensor, 1, 0);
    put_varint(&tensor, 7); /* DT_STRING */
    put_message(&tensor, 2, &shape); /* a scalar: no dims */
    put_bytes(&tensor, 8, text, strlen(text));
    put_bytes(&value, 1, tag, strlen(tag));
    put_message(&value, 9, &meta);
    put_message(&value, 8, &tensor);
    put_message(&summary, 1, &value);
    put_event_head(&ev, now_seconds(), step);
    put_message(&ev, 5, &summary);
    return write_record(tb, &ev);
}

void fl_tfevents_close(fl_tfevents *tb) {
    if (tb->fp) fclose(tb->fp);
    free(tb->path);
    memset(tb, 0, sizeof *tb);
}
