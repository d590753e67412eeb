/* test_dist.c — data-parallel training (dist/dist.h, docs/DISTRIBUTED.md) through the CLI:
 *   equality: `mpirun -np 2` with --grad-accum 1 gives the adapter, AdamW moments, losses and eval
 *     losses of one process with --grad-accum 2, bit for bit, with LoRA dropout, packing, shuffling,
 *     an eval split and a partial last step of an epoch (where rank 1 has no micro-batch);
 *   resume: stopped after step 3 under 2 ranks, resumed under 2 ranks and under 1 process (same rows
 *     per step): both end bit for bit where the uninterrupted run ends; other rows per step refused;
 *   failure: a rank killed (SIGKILL) or hung mid-run ends the job within a bounded time with a clear
 *     message; a setup failure on rank 0 alone stops both ranks with one message;
 *   bench under mpirun: per-rank and aggregate tok/s and the scaling efficiency;
 *   the one-rank distributed path (FASTLORA_DIST_FORCE=1) equals a plain run — no mpirun needed.
 * Why bit for bit is expected, not a tolerance: each LoRA gradient element gets one `+=` per
 * micro-batch, of that micro-batch's full sum scaled by alpha (cpu_matmul.c, small_rank_tn, no FMA
 * contraction under -std=c11). One process computes g = (0 + a) + b, the two ranks a and b and MPI
 * a + b: the same single rounding of the same two addends, in either order. The loss sums (double)
 * likewise. With more than 2 ranks, or more than one micro-batch per rank, the grouping of the
 * additions differs from one process's sequence, and equality holds to f32 rounding only.
 * The MPI tests SKIP when mpirun is absent or this build has no MPI. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "dist/dist_internal.h"
#include "common/error.h"
#include "io/file_util.h"
#include "test.h"
#include "train/data.h"

#define FIXTURE_MODEL "tests/fixtures/hf/llama_gqa/model"
/* As root (CI) Open MPI wants both variables; one thread per rank, so 2 ranks fit 2 cores. */
#define MPIRUN "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 timeout -k 5 120 " \
               "mpirun --oversubscribe --bind-to none"

static const char *fastlora_bin(void) {
    const char *bin = getenv("FASTLORA_BIN");
    return bin && access(bin, X_OK) == 0 ? bin : NULL;
}

/* NULL when the MPI tests can run, else why not. */
static const char *mpi_missing(void) {
    if (!fastlora_bin()) return "FASTLORA_BIN not set";
    if (!fl_dist_mpi_built()) return "this build has no MPI (install libopenmpi-dev and rebuild)";
    if (system("command -v mpirun >/dev/null 2>&1") != 0) return "mpirun not installed";
    return NULL;
}

static char *temp_dir(void) {
    char *d = strdup("/tmp/fastlora-dist-XXXXXX");
    if (!mkdtemp(d)) { free(d); return NULL; }
    return d;
}

static void remove_tree(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* 28 documents of 3..31 tokens: 25 train documents packed into 30 rows of 16, so 4 rows per step end
 * the epoch with a partial step 8 (one micro-batch for two ranks), and steps 9-10 start epoch 2. */
static void write_data(const char *dir) {
    fl_dataset ds = {0};
    for (int d = 0; d < 28; d++) {
        int32_t ids[40];
        int n = 3 + (d * 7) % 29;
        for (int i = 0; i < n; i++) ids[i] = (int32_t)((d * 5 + i * i + 3) % 61 + 3);
        fl_dataset_add(&ds, ids, NULL, n);
    }
    char path[600];
    snprintf(path, sizeof path, "%s/data.tokens", dir);
    if (fl_tokens_file_write(path, &ds)) printf("    %s\n", fl_last_error());
    fl_dataset_free(&ds);
}

/* Runs `prefix fastlora train ... extra` with the common options; returns the exit status (-1 when
 * killed by a signal) and the run's wall seconds; the output goes to dir/log-NAME. */
static int train(const char *dir, const char *prefix, const char *name, const char *extra, double *seconds) {
    const char *common = "--seq 16 --batch 2 --max-steps 10 --save-every 3 --keep 5 --rank 4 --alpha 8 --lr 0.01 "
                         "--warmup 2 --dropout 0.1 --eval-frac 0.1 --eval-every 3 --log-every 1";
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s train --model %s --data %s/data.tokens --out %s/%s %s %s >%s/log-%s 2>&1", prefix,
             fastlora_bin(), FIXTURE_MODEL, dir, dir, name, common, extra, dir, name);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = system(cmd);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (seconds) *seconds = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static char *read_log(const char *dir, const char *name) {
    char path[600];
    snprintf(path, sizeof path, "%s/log-%s", dir, name);
    char *text = NULL;
    size_t len;
    if (fl_file_read_all(path, FL_FILE_CONFIG, &text, &len)) return strdup("");
    return text;
}

static int files_equal(const char *dir, const char *a, const char *b, const char *file) {
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cmp -s '%s/%s/%s' '%s/%s/%s'", dir, a, file, dir, b, file);
    return system(cmd) == 0;
}

/* The metrics of two runs agree bit for bit in every field but the throughput. */
static int metrics_equal(const char *dir, const char *a, const char *b) {
    char pa[600], pb[600];
    snprintf(pa, sizeof pa, "%s/%s/metrics.jsonl", dir, a);
    snprintf(pb, sizeof pb, "%s/%s/metrics.jsonl", dir, b);
    FILE *fa = fopen(pa, "r"), *fb = fopen(pb, "r");
    int equal = fa && fb, lines = 0;
    char la[1024], lb[1024];
    while (equal) {
        char *ra = fgets(la, sizeof la, fa), *rb = fgets(lb, sizeof lb, fb);
        if (!ra || !rb) { equal = !ra && !rb; break; }
        json_t *ja = json_loads(la, 0, NULL), *jb = json_loads(lb, 0, NULL);
        if (ja) json_object_del(ja, "tok_per_s");
        if (jb) json_object_del(jb, "tok_per_s");
        equal = ja && jb && json_equal(ja, jb);
        if (!equal) printf("    metrics differ: %s    vs %s", la, lb);
        json_decref(ja);
        json_decref(jb);
        lines++;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return equal && lines > 8;
}

TEST(dist_mpi_two_ranks_equal_one_process_with_twice_the_accumulation) {
    const char *why = mpi_missing();
    if (why) SKIP(why);
    char *dir = temp_dir();
    write_data(dir);
    CHECK_EQ_INT(train(dir, "OMP_NUM_THREADS=1", "one", "--grad-accum 2", NULL), 0);
    CHECK_EQ_INT(train(dir, MPIRUN " -np 2", "two", "--grad-accum 1", NULL), 0);
    char *log = read_log(dir, "two");
    CHECK_STR_CONTAINS(log, "x 2 ranks");
    CHECK_STR_CONTAINS(log, "(end of epoch: 2 of 4 rows)"); /* a partial step: 1 micro-batch, rank 1 idle */
    free(log);
    CHECK(files_equal(dir, "one", "two", "adapter_model.safetensors"));
    CHECK(files_equal(dir, "one", "two", "checkpoints/step-00000009/optimizer.safetensors"));
    CHECK(metrics_equal(dir, "one", "two"));
    /* the comparison can fail: another seed is another adapter */
    CHECK_EQ_INT(train(dir, MPIRUN " -np 2", "seed", "--grad-accum 1 --seed 7", NULL), 0);
    CHECK(!files_equal(dir, "one", "seed", "adapter_model.safetensors"));
    remove_tree(dir);
    free(dir);
}

TEST(dist_mpi_resume_under_two_ranks_or_one_process) {
    const char *why = mpi_missing();
    if (why) SKIP(why);
    char *dir = temp_dir();
    write_data(dir);
    CHECK_EQ_INT(train(dir, "OMP_NUM_THREADS=1", "ref", "--grad-accum 2", NULL), 0);
    /* stopped after step 3 (as Ctrl-C: checkpoint, status 130) under 2 ranks, twice */
    CHECK_EQ_INT(train(dir, "FASTLORA_TEST_STOP_AT_STEP=3 " MPIRUN " -np 2", "a", "--grad-accum 1", NULL), 130);
    CHECK_EQ_INT(train(dir, "FASTLORA_TEST_STOP_AT_STEP=3 " MPIRUN " -np 2", "b", "--grad-accum 1", NULL), 130);
    char extra[700];
    snprintf(extra, sizeof extra, "--grad-accum 1 --resume %s/a", dir);
    CHECK_EQ_INT(train(dir, MPIRUN " -np 2", "a", extra, NULL), 0);
    CHECK(files_equal(dir, "ref", "a", "adapter_model.safetensors"));
    CHECK(metrics_equal(dir, "ref", "a"));
    /* another rank count with the same rows per step (1 process x 2 micro-batches) continues the run */
    snprintf(extra, sizeof extra, "--grad-accum 2 --resume %s/b", dir);
    CHECK_EQ_INT(train(dir, "OMP_NUM_THREADS=1", "b", extra, NULL), 0);
    CHECK(files_equal(dir, "ref", "b", "adapter_model.safetensors"));
    /* other rows per step: refused, with what the checkpoint had */
    snprintf(extra, sizeof extra, "--grad-accum 2 --resume %s/b", dir);
    CHECK_EQ_INT(train(dir, MPIRUN " -np 2", "b", extra, NULL), 2);
    char *log = read_log(dir, "b");
    CHECK_STR_CONTAINS(log, "the checkpoint's run took 4 rows per step (1 rank); this run takes 8 (--batch 2 x "
                            "--grad-accum 2 x 2 ranks): resume with the same rows per step");
    free(log);
    remove_tree(dir);
    free(dir);
}

/* The job must end within a bound, never hang: a killed rank (SIGKILL at step 3), and a hung rank
 * (sleeps forever at step 3; the others' collective times out after FASTLORA_DIST_TIMEOUT = 3 s). */
TEST(dist_mpi_rank_killed_or_hung_ends_the_job) {
    const char *why = mpi_missing();
    if (why) SKIP(why);
    char *dir = temp_dir();
    write_data(dir);
    double seconds;
    int rc = train(dir, "FASTLORA_TEST_DIST_FAULT=kill:1:3 FASTLORA_DIST_TIMEOUT=30 " MPIRUN " -np 2", "kill",
                   "--grad-accum 1", &seconds);
    char *log = read_log(dir, "kill");
    printf("    killed rank: status %d after %.1f s\n", rc, seconds);
    CHECK(rc != 0 && rc != 124); /* 124: the test's own timeout, i.e. a hang */
    CHECK(seconds < 60);
    CHECK_STR_CONTAINS(log, "test fault 'kill' at step 3");
    CHECK_MSG(strstr(log, "fastlora (rank 0 of 2): stopped by SIGTERM from the launcher") || strstr(log, "stopping every rank") ||
              strstr(log, "exited on signal 9"), "no clear message on the other rank: %s", log);
    free(log);
    rc = train(dir, "FASTLORA_TEST_DIST_FAULT=hang:1:3 FASTLORA_DIST_TIMEOUT=3 " MPIRUN " -np 2", "hang",
               "--grad-accum 1", &seconds);
    log = read_log(dir, "hang");
    printf("    hung rank: status %d after %.1f s\n", rc, seconds);
    CHECK(rc != 0 && rc != 124);
    CHECK(seconds < 60);
    CHECK_STR_CONTAINS(log, "fastlora (rank 0 of 2): the LoRA gradients of step 3: no answer from the other ranks for 3 s");
    free(log);
    remove_tree(dir);
    free(dir);
}

/* Only rank 0 looks at --out: an earlier run there fails rank 0 alone, and both ranks stop at the
 * setup agreement with one message (not one per rank, not a hang). */
TEST(dist_mpi_setup_failure_on_one_rank_stops_all) {
    const char *why = mpi_missing();
    if (why) SKIP(why);
    char *dir = temp_dir();
    write_data(dir);
    CHECK_EQ_INT(train(dir, MPIRUN " -np 2", "run", "--grad-accum 1 --max-steps 1", NULL), 0);
    double seconds;
    CHECK_EQ_INT(train(dir, MPIRUN " -np 2", "run", "--grad-accum 1", &seconds), 2);
    char *log = read_log(dir, "run");
    const char *first = strstr(log, "holds an earlier run");
    CHECK(first != NULL);
    CHECK_MSG(first && !strstr(first + 1, "holds an earlier run"), "the message is printed more than once: %s", log);
    CHECK(seconds < 60);
    free(log);
    remove_tree(dir);
    free(dir);
}

TEST(dist_mpi_bench_reports_ranks_and_scaling) {
    const char *why = mpi_missing();
    if (why) SKIP(why);
    char cmd[1024];
    char *dir = temp_dir();
    snprintf(cmd, sizeof cmd, MPIRUN " -np 2 %s bench --model %s --batch 2 --seq 16 --rank 4 --steps 3 --warmup 1 "
             "--no-sgemm >%s/log-bench 2>&1", fastlora_bin(), FIXTURE_MODEL, dir);
    CHECK_EQ_INT(system(cmd), 0);
    char *log = read_log(dir, "bench");
    CHECK_STR_CONTAINS(log, "| rank | host | device | train tok/s | ms/step | all-reduce ms |");
    CHECK_STR_CONTAINS(log, "| 1 |");
    CHECK_STR_CONTAINS(log, "aggregate: ");
    CHECK_STR_CONTAINS(log, "scaling efficiency ");
    free(log);
    remove_tree(dir);
    free(dir);
}

/* The distributed code path with one rank (every collective the identity): the plain run's adapter
 * and metrics bit for bit. Needs no mpirun: it runs everywhere. */
TEST(dist_one_rank_path_equals_plain_run) {
    if (!fastlora_bin()) SKIP("FASTLORA_BIN not set");
    char *dir = temp_dir();
    write_data(dir);
    CHECK_EQ_INT(train(dir, "OMP_NUM_THREADS=1", "plain", "--grad-accum 2", NULL), 0);
    CHECK_EQ_INT(train(dir, "OMP_NUM_THREADS=1 FASTLORA_DIST_FORCE=1", "forced", "--grad-accum 2", NULL), 0);
    CHECK(files_equal(dir, "plain", "forced", "adapter_model.safetensors"));
    CHECK(metrics_equal(dir, "plain", "forced"));
    remove_tree(dir);
    free(dir);
}

/* NCCL with one rank on a GPU: the communicator, an all-reduce and a broadcast on device memory
 * (the whole transport; one rank needs no MPI). SKIPs without a GPU or without NCCL in the build. */
TEST(cuda_dist_nccl_one_rank_collectives) {
    const fl_backend *be = NULL;
    if (fl_backend_select("cuda", &be) || !be) SKIP("no CUDA GPU");
    if (!fl_dist_nccl_built()) SKIP("this build has no NCCL");
    fl_dist_self.active = 1;
    fl_dist_use_backend(be);
    CHECK_EQ_INT(fl_dist_world()->transport, FL_DIST_NCCL);
    enum { N = 1000003 };
    float *host = malloc(sizeof(float) * N), *back = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) host[i] = (float)(i % 977) * 0.25f - 17.0f;
    float *dev = be->alloc(sizeof(float) * N);
    be->upload(dev, host, sizeof(float) * N);
    fl_dist_allreduce_sum_f32(dev, N, "a test all-reduce");
    be->download(back, dev, sizeof(float) * N);
    CHECK(memcmp(host, back, sizeof(float) * N) == 0); /* the sum over one rank is the buffer */
    fl_dist_broadcast(dev, sizeof(float) * N, "a test broadcast");
    be->download(back, dev, sizeof(float) * N);
    CHECK(memcmp(host, back, sizeof(float) * N) == 0);
    be->free(dev);
    free(host);
    free(back);
    fl_dist_self.active = 0;
    fl_dist_self.transport = FL_DIST_NONE;
}

/* On a GPU, the plain run records its step as a CUDA graph and replays it (fl_model_train_step);
 * the one-rank distributed path runs each step op by op and sums the gradients through NCCL.
 * Same adapter and metrics bit for bit: the recording reads every changing input (batches, dropout
 * streams, lr, AdamW's step) from device memory. SKIPs without a GPU. */
TEST(cuda_dist_one_rank_path_equals_plain_graph_run) {
    if (!fastlora_bin()) SKIP("FASTLORA_BIN not set");
    const fl_backend *be = NULL;
    if (fl_backend_select("cuda", &be) || !be) SKIP("no CUDA GPU");
    char *dir = temp_dir();
    write_data(dir);
    CHECK_EQ_INT(train(dir, "", "plain", "--device cuda --grad-accum 2", NULL), 0);
    CHECK_EQ_INT(train(dir, "FASTLORA_DIST_FORCE=1", "forced", "--device cuda --grad-accum 2", NULL), 0);
    CHECK(files_equal(dir, "plain", "forced", "adapter_model.safetensors"));
    CHECK(metrics_equal(dir, "plain", "forced"));
    char *log = read_log(dir, "plain");
    CHECK_STR_CONTAINS(log, "replayed from a CUDA graph");
    free(log);
    remove_tree(dir);
    free(dir);
}

/* A timeout that is not a positive number of seconds is refused before anything runs. */
TEST(dist_bad_input_timeout) {
    if (!fastlora_bin()) SKIP("FASTLORA_BIN not set");
    const char *bad[] = {"abc", "0", "-5", "10s", "nan"};
    for (int i = 0; i < 5; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "FASTLORA_DIST_TIMEOUT=%s %s train --model %s --data x --out /nonexistent/x 2>&1 | "
                 "grep -q \"FASTLORA_DIST_TIMEOUT='%s': expected a positive number of seconds\"", bad[i], fastlora_bin(),
                 FIXTURE_MODEL, bad[i]);
        CHECK_MSG(system(cmd) == 0, "FASTLORA_DIST_TIMEOUT=%s not refused with the message", bad[i]);
        snprintf(cmd, sizeof cmd, "FASTLORA_DIST_TIMEOUT=%s %s train --model %s --data x --out /nonexistent/x >/dev/null 2>&1",
                 bad[i], fastlora_bin(), FIXTURE_MODEL);
        int rc = system(cmd);
        CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
    }
}
