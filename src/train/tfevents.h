/* tfevents.h — TensorBoard event files, written by our own small encoder (no TensorFlow, no
 * protobuf library): `OUT/runs/events.out.tfevents.<seconds>.<host>.<pid>.0`.
 *
 * The file is a TFRecord stream: each record is
 *     uint64 length (little-endian) | uint32 masked_crc32c(length bytes) | data | uint32 masked_crc32c(data)
 * with masked_crc32c(x) = ((c >> 15) | (c << 17)) + 0xa282ead8, c = CRC-32C (Castagnoli) of x.
 * Each data is one `tensorflow.Event` protobuf:
 *     Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5;
 *               SessionLog session_log = 7; }
 *     Summary { repeated Value value = 1; }
 *     Value   { string tag = 1; float simple_value = 2; SummaryMetadata metadata = 9; TensorProto tensor = 8; }
 *     SummaryMetadata { PluginData plugin_data = 1; }   PluginData { string plugin_name = 1; }
 *     TensorProto { DataType dtype = 1 (DT_STRING = 7); TensorShapeProto tensor_shape = 2; repeated bytes string_val = 8; }
 *     SessionLog { SessionStatus status = 1 (START = 1); }
 * The first record is {wall_time, file_version: "brain.Event:2"}; scalars are simple_value
 * (TensorBoard's scalars dashboard), the run's options one text summary (its text plugin).
 * Every record is flushed as it is written, so a killed run leaves a file whose complete records
 * all read back. A resumed run writes a new file that opens with SessionLog START at the step it
 * resumes at, which tells TensorBoard to drop the earlier file's later steps.
 * Not the metrics themselves (metrics.c decides what is logged).
 */
#ifndef FL_TRAIN_TFEVENTS_H
#define FL_TRAIN_TFEVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/strbuf.h"

typedef struct {
    FILE *fp;
    char *path;
} fl_tfevents;

/* Creates OUT/runs/ and a new event file in it (its first record written). resume_step >= 0:
 * then a SessionLog START at resume_step + 1 follows; < 0 (a fresh run): earlier event files in
 * OUT/runs are removed first. */
int fl_tfevents_open(fl_tfevents *tb, const char *out_dir, int resume_step);
/* One Event at `step` with n scalars (tags[i], values[i]). */
int fl_tfevents_scalars(fl_tfevents *tb, int64_t step, int n, const char *const *tags, const float *values);
/* One Event with a text summary (Markdown, as TensorBoard's text plugin shows it). */
int fl_tfevents_text(fl_tfevents *tb, int64_t step, const char *tag, const char *text);
void fl_tfevents_close(fl_tfevents *tb);
/* Removes OUT/runs/events.out.tfevents.* (and OUT/runs when that empties it): --overwrite. */
void fl_tfevents_remove(const char *out_dir);

/* ---- the encoder, for tests ---- */
uint32_t fl_crc32c(const void *data, size_t n);
uint32_t fl_tfrecord_masked_crc(const void *data, size_t n);
/* Appends one TFRecord (framing + data) to *out. */
void fl_tfrecord_append(fl_strbuf *out, const void *data, size_t n);
/* The Event protobuf of n scalars at (wall_time, step), appended to *out. */
void fl_tfevent_encode_scalars(fl_strbuf *out, double wall_time, int64_t step, int n, const char *const *tags,
                               const float *values);

#endif
