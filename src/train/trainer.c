/* trainer.c — the training loop (see trainer.h). */
#include "train/trainer.h"

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "dist/dist.h"
#include "io/file_util.h"
#include "io/path_guard.h"
#include "io/run_lock.h"
#include "lora/adapter_io.h"
#include "model/weights.h"
#include "train/checkpoint.h"
#include "train/metrics.h"
#include "train/preference_run.h"
#include "train/run_dir.h"
#include "train/run_inputs.h"
#include "train/schedule.h"

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig) { (void)sig; interrupted = 1; }

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

fl_step_stats fl_train_accumulate_share(fl_model *m, const fl_batch *micro, int n_micro, int rank, int ranks) {
    fl_model_accumulate(m, micro, n_micro, rank, ranks);
    return fl_model_step_stats(m);
}

fl_step_stats fl_train_accumulate(fl_model *m, const fl_batch *micro, int n_micro) {
    return fl_train_accumulate_share(m, micro, n_micro, 0, 1);
}

/* Fills B rows starting at row r0 of rows (rows past the end are padding). */
static void fill_rows(const fl_rows *rows, const fl_dataset *ds, size_t r0, int B, size_t limit, int32_t *ids,
                      int32_t *targets, int32_t *pos, int32_t *seg) {
    int T = rows->T;
    for (int b = 0; b < B; b++) {
        size_t off = (size_t)b * T;
        if (r0 + b < limit) {
            fl_rows_fill(rows, ds, r0 + b, ids + off, targets + off, pos + off, seg + off);
        } else {
            for (int t = 0; t < T; t++) { ids[off + t] = 0; targets[off + t] = -100; pos[off + t] = 0; seg[off + t] = t; }
        }
    }
}

double fl_train_eval_loss(fl_model *m, const fl_rows *rows, const fl_dataset *ds, int B, size_t max_rows,
                          size_t *n_tokens) {
    size_t limit = max_rows && max_rows < rows->n_rows ? max_rows : rows->n_rows;
    size_t N = (size_t)B * rows->T;
    int32_t *buf = fl_malloc(4 * N * sizeof(int32_t));
    int32_t *ids = buf, *targets = buf + N, *pos = buf + 2 * N, *seg = buf + 3 * N;
    int was_training = m->training;
    uint64_t micro = m->micro_step;
    m->training = 0;
    /* batch k on rank k mod ranks; its (loss sum, tokens) in part[2k..2k+1], zeros elsewhere, so the
     * sum over ranks is exact and the total is added up in batch order whatever the rank count */
    const fl_dist *dist = fl_dist_world();
    size_t n_batches = (limit + (size_t)B - 1) / (size_t)B;
    double *part = fl_calloc(2 * n_batches + 1, sizeof(double));
    for (size_t k = (size_t)dist->rank; k < n_batches; k += (size_t)dist->size) {
        fill_rows(rows, ds, k * (size_t)B, B, limit, ids, targets, pos, seg);
        fl_batch batch = {.B = B, .T = rows->T, .ids = ids, .targets = targets, .pos = pos, .seg_start = seg};
        fl_step_stats s = fl_model_eval_loss(m, &batch);
        part[2 * k] = s.loss_sum;
        part[2 * k + 1] = (double)s.n_counted;
    }
    if (dist->active) fl_dist_allreduce_sum_f64(part, 2 * n_batches, "the eval loss");
    double sum = 0;
    size_t counted = 0;
    for (size_t k = 0; k < n_batches; k++) {
        sum += part[2 * k];
        counted += (size_t)part[2 * k + 1];
    }
    free(part);
    m->have_forward = 0;
    m->training = was_training;
    m->micro_step = micro;
    free(buf);
    if (n_tokens) *n_tokens = counted;
    return counted ? sum / (double)counted : NAN;
}

/* ---- progress ------------------------------------------------------------------------------ */

static void format_duration(char *out, size_t cap, double s) {
    if (!(s >= 0) || s > 1e7) { snprintf(out, cap, "?"); return; }
    int t = (int)(s + 0.5);
    if (t >= 3600) snprintf(out, cap, "%dh%02dm", t / 3600, t / 60 % 60);
    else if (t >= 60) snprintf(out, cap, "%dm%02ds", t / 60, t % 60);
    else snprintf(out, cap, "%ds", t);
}

typedef struct {
    FILE *log;
    int tty, line_open;
} progress;

static void progress_message(progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress_message(progress *p, const char *fmt, ...) {
    if (p->line_open) { fputc('\n', p->log); p->line_open = 0; }
    va_list args;
    va_start(args, fmt);
    vfprintf(p->log, fmt, args);
    va_end(args);
    fflush(p->log);
}

/* ---- the run ------------------------------------------------------------------------------- */

typedef struct {
    const fl_train_options *opt;
    fl_model *m;
    fl_dataset train_ds, eval_ds_own;
    const fl_dataset *eval_ds;
    uint32_t *train_idx, *eval_idx;
    size_t n_train, n_eval;
    fl_pack_options pack;
    fl_rows rows, eval_rows;
    fl_metrics metrics;
    progress prog;
    char *ckpt_root, *svg_path;
    int n_saves;
    int lead;    /* rank 0: the one rank that writes OUT and prints progress */
    FILE *quiet; /* the other ranks' progress stream (/dev/null) */
    fl_run_lock lock;  /* OUT/.fastlora-lock, held by rank 0 for the whole run */
    int restart;       /* OUT holds a run that stopped before its first checkpoint: cleared, started again */
    fl_chat_template *chat; /* messages data: the run's one compiled chat template (NULL: none) */
    fl_pref_run *pref;      /* preference tuning (--objective dpo, ...): its pairs are the rows; NULL: sft */
} run_ctx;

/* Rows of the current epoch: packed rows, or a preference run's pairs. */
static size_t epoch_rows(const run_ctx *c) { return c->pref ? c->pref->n_train : c->rows.n_rows; }

static int load_data(run_ctx *c, fl_tokenizer *tok, fl_train_result *res) {
    const fl_train_options *o = c->opt;
    if (fl_pref_run_wanted(o)) {
        c->pref = fl_calloc(1, sizeof *c->pref);
        FL_TRY(fl_pref_run_load(c->pref, o, c->m, tok, c->prog.log, &res->n_bad_lines));
        res->n_train_docs = c->pref->n_train;
        res->n_eval_docs = c->pref->n_eval;
        return 0;
    }
    fl_data_options d = fl_data_options_default();
    FL_TRY(fl_data_format_parse(o->format, &d.format));
    FL_TRY(fl_data_parse_field_map(o->fields, &d));
    d.strict = o->strict;
    d.eos_id = tok && fl_tokenizer_eos_id(tok) >= 0 ? fl_tokenizer_eos_id(tok) : c->m->cfg.eos_token_id;
    d.vocab_size = c->m->cfg.vocab_size;
    d.log = c->prog.log;
    FL_TRY(fl_data_chat_template(tok, o->chat_template, &c->chat));
    d.chat_template = c->chat;
    d.chat_now = (int64_t)o->chat_date;
    FL_TRY(fl_dataset_load(&c->train_ds, o->data, tok, &d));
    res->n_bad_lines = c->train_ds.n_bad;
    if (o->eval_data) {
        FL_TRY(fl_dataset_load(&c->eval_ds_own, o->eval_data, tok, &d));
        if (!c->eval_ds_own.n_docs) /* asked for, so not silently a run without eval */
            return fl_input_error("%s: no usable evaluation documents (%zu lines, %zu skipped) (--eval-data)", o->eval_data,
                                  c->eval_ds_own.n_lines, c->eval_ds_own.n_bad);
        res->n_bad_lines += c->eval_ds_own.n_bad;
        c->eval_ds = &c->eval_ds_own;
        fl_split_eval(c->train_ds.n_docs, 0.0, 0, &c->train_idx, &c->n_train, &c->eval_idx, &c->n_eval);
        free(c->eval_idx);
        c->n_eval = c->eval_ds_own.n_docs;
        c->eval_idx = fl_malloc(sizeof(uint32_t) * (c->n_eval + 1));
        for (size_t i = 0; i < c->n_eval; i++) c->eval_idx[i] = (uint32_t)i;
    } else {
        c->eval_ds = &c->train_ds;
        fl_split_eval(c->train_ds.n_docs, o->eval_frac, (uint64_t)o->seed, &c->train_idx, &c->n_train, &c->eval_idx,
                      &c->n_eval);
    }
    if (!c->n_train) return fl_input_error("%s: no usable training documents (%zu lines, %zu skipped)", o->data,
                                           c->train_ds.n_lines, c->train_ds.n_bad);
    res->n_train_docs = c->n_train;
    res->n_eval_docs = c->n_eval;
    return 0;
}

static void run_free(run_ctx *c) {
    fl_dataset_free(&c->train_ds);
    fl_dataset_free(&c->eval_ds_own);
    free(c->train_idx);
    free(c->eval_idx);
    fl_rows_free(&c->rows);
    fl_rows_free(&c->eval_rows);
    fl_metrics_close(&c->metrics);
    free(c->ckpt_root);
    free(c->svg_path);
    if (c->quiet) fclose(c->quiet);
    fl_run_lock_release(&c->lock);
    fl_chat_template_free(c->chat);
    if (c->pref) fl_pref_run_free(c->pref);
    free(c->pref);
}

static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

/* Optimizer steps of `epochs` epochs: each epoch is ceil(rows / rows_per_step) steps (its last one
 * partial), a fraction of an epoch that fraction of its steps, rounded up (the HF Trainer's
 * ceil(epochs * steps_per_epoch)). Packing a fresh shuffle can change the row count from epoch to
 * epoch, so with both on each epoch's rows are counted. Returns a double: the caller rejects
 * counts past FL_TRAIN_MAX_STEPS. */
static double count_steps(const run_ctx *c, double epochs, size_t rows_per_step) {
    double first = (double)ceil_div(c->rows.n_rows, rows_per_step);
    /* rows vary by a few per epoch at most: far past the limit is past it without counting */
    if (epochs <= 1 || !c->pack.packing || !c->pack.shuffle || epochs * first > 2.0 * FL_TRAIN_MAX_STEPS)
        return ceil(epochs * first);
    double steps = 0;
    for (uint64_t e = 0; (double)e < epochs && steps <= FL_TRAIN_MAX_STEPS; e++) {
        fl_rows rows;
        fl_rows_build(&rows, &c->train_ds, c->train_idx, c->n_train, &c->pack, e);
        double per_epoch = (double)ceil_div(rows.n_rows, rows_per_step);
        fl_rows_free(&rows);
        steps += (double)e + 1 <= epochs ? per_epoch : ceil((epochs - (double)e) * per_epoch);
    }
    return steps;
}

static int save_checkpoint(run_ctx *c, const fl_train_state *st) {
    c->n_saves++;
    char *dir = NULL;
    int crash = c->opt->crash_in_checkpoint == c->n_saves   ? FL_CKPT_CRASH_IN_WRITE
                : c->opt->crash_in_rotation == c->n_saves ? FL_CKPT_CRASH_IN_ROTATION : 0;
    int status = fl_checkpoint_save(c->ckpt_root, c->m, st, c->opt->model, c->opt->keep, crash, &dir);
    if (!status) status = fl_metrics_write_svg(&c->metrics, c->svg_path, "fastlora train: loss");
    if (!status) progress_message(&c->prog, "step %d: checkpoint %s\n", st->step, dir);
    free(dir);
    return status;
}

/* A preference run's evaluation: the loss and TRL's metrics, means over the eval pairs. */
static double pref_eval(run_ctx *c, int step) {
    fl_pref_run *r = c->pref;
    size_t n = c->opt->eval_max_rows && (size_t)c->opt->eval_max_rows < r->n_eval ? (size_t)c->opt->eval_max_rows : r->n_eval;
    fl_pref_metrics pm;
    fl_pref_trainer_eval(&r->trainer, c->m, r->eval_set, &r->ref_eval, r->eval_idx, n, &pm);
    fl_metric_extra x;
    fl_pref_run_extra(r, &pm, &x);
    if (c->lead) fl_metrics_eval(&c->metrics, step, pm.loss, pm.n_tokens, &x);
    progress_message(&c->prog, "step %d: eval loss %.4f, rewards/accuracies %.3f, rewards/margins %.4f (%zu pairs)\n",
                     step, pm.loss, pm.accuracy, pm.margin, pm.n_pairs);
    return pm.loss;
}

static void do_eval(run_ctx *c, int step, double *out) {
    if (c->pref) {
        double loss = pref_eval(c, step);
        if (out) *out = loss;
        return;
    }
    size_t tokens;
    double loss = fl_train_eval_loss(c->m, &c->eval_rows, c->eval_ds, c->opt->batch, (size_t)c->opt->eval_max_rows, &tokens);
    if (c->lead) fl_metrics_eval(&c->metrics, step, loss, tokens, NULL);
    progress_message(&c->prog, "step %d: eval loss %.4f (%zu tokens)\n", step, loss, tokens);
    if (out) *out = loss;
}

/* ---- several ranks (dist/dist.h) ------------------------------------------------------------- */

/* Rank 0's starting point to every rank: the state (zeros, or the checkpoint only rank 0 read), the
 * LoRA parameters and AdamW moments (an --adapter or a checkpoint starts every rank alike), then the
 * rows of the state's epoch. */
static int share_start(run_ctx *c, fl_train_state *st) {
    fl_model *m = c->m;
    fl_dist_broadcast_host(st, sizeof *st, "the training state");
    size_t bytes = m->lora.n * sizeof(float);
    fl_dist_broadcast(m->lora.data, bytes, "the LoRA parameters");
    fl_dist_broadcast(m->adam_m.data, bytes, "the AdamW first moments");
    fl_dist_broadcast(m->adam_v.data, bytes, "the AdamW second moments");
    fl_model_sync_lora(m);
    m->adam_step = st->adam_step;
    m->micro_step = st->micro_step;
    if (!c->lead && st->epoch != 0 && !c->pref) {
        fl_rows_free(&c->rows);
        fl_rows_build(&c->rows, &c->train_ds, c->train_idx, c->n_train, &c->pack, st->epoch);
    }
    return 0;
}

/* The step's LoRA gradients and loss summed over the ranks (each holds the sum over its own
 * micro-batches, already scaled by 1 / the counted tokens of the whole step); returns whether any
 * rank was interrupted (Ctrl-C), so that all stop after the same step. */
static int sum_over_ranks(fl_model *m, fl_step_stats *s, int interrupted_here, int step) {
    char what[64];
    snprintf(what, sizeof what, "the LoRA gradients of step %d", step);
    fl_dist_allreduce_sum_f32(m->grads.data, m->grads.n, what);
    double v[3] = {s->loss_sum, (double)s->n_counted, interrupted_here ? 1.0 : 0.0};
    snprintf(what, sizeof what, "the loss of step %d", step);
    fl_dist_allreduce_sum_f64(v, 3, what);
    s->loss_sum = v[0];
    s->n_counted = (size_t)v[1];
    s->loss = s->n_counted ? s->loss_sum / (double)s->n_counted : 0.0;
    return v[2] > 0;
}

/* Rank 0's status after writing `what` (it alone writes), so every rank stops when it failed. */
static int lead_status(int rc, const char *what, int step) {
    char label[96];
    snprintf(label, sizeof label, "rank 0's status after writing %s at step %d", what, step);
    fl_dist_broadcast_host(&rc, sizeof rc, label);
    if (rc && fl_dist_world()->rank != 0) fl_fail(rc, "rank 0 could not write %s at step %d (its message is above)", what, step);
    return rc;
}

/* At each checkpoint: the ranks apply the same update to the same sums, so their LoRA parameters
 * must be equal bit for bit; a checksum that differs between ranks is a bug, and the run stops. */
static int check_ranks_agree(const fl_model *m, int step) {
    size_t n = m->lora.n;
    uint32_t *bits = fl_malloc(n * sizeof(float) + 1);
    m->be->download(bits, m->lora.data, n * sizeof(float));
    uint64_t h = 1469598103934665603ull; /* FNV-1a over the words */
    for (size_t i = 0; i < n; i++) h = (h ^ bits[i]) * 1099511628211ull;
    free(bits);
    double x = (double)(h >> 11), lo, hi; /* 53 bits: exact in a double */
    fl_dist_allreduce_minmax_f64(&x, &lo, &hi, 1, "the checksum of the LoRA parameters");
    if (lo != hi)
        return fl_fail(FL_ERR_INTERNAL, "step %d: the ranks' LoRA parameters differ (checksums %.0f to %.0f): a bug in "
                       "the data-parallel path; rank 0's checkpoint is kept", step, lo, hi);
    return 0;
}

static const char *ranks_note(const fl_dist *dist) {
    static char note[32];
    note[0] = 0;
    if (dist->size > 1) snprintf(note, sizeof note, " x %d ranks", dist->size);
    return note;
}

int fl_train_run(const fl_train_options *opt, fl_model *m, fl_tokenizer *tok, fl_train_result *res) {
    memset(res, 0, sizeof *res);
    res->first_eval_loss = res->last_eval_loss = NAN;
    FL_TRY(fl_train_options_validate(opt));
    FL_TRY(fl_model_check_length(m, opt->seq, "--seq"));
    if (fl_pref_run_wanted(opt) && fl_dist_world()->active)
        return fl_input_error("--objective %s: preference tuning runs in one process (this job has %d ranks)",
                              opt->objective, fl_dist_world()->size);
    /* In a job of several ranks (dist/dist.h) rank 0 alone reads and writes OUT and prints progress;
     * every rank loads the data and packs the same rows. A failure of any rank before the setup
     * agreement below stops them all there (a rank that returns early agrees in cmd_train). */
    const fl_dist *dist = fl_dist_world();
    run_ctx c = {.opt = opt, .m = m, .lead = dist->rank == 0};
    c.prog.log = !c.lead ? (c.quiet = fopen("/dev/null", "w")) : opt->log ? opt->log : stderr;
    if (!c.prog.log) return fl_fail(FL_ERR_INTERNAL, "cannot open /dev/null");
    c.prog.tty = isatty(fileno(c.prog.log));
    int status = c.lead ? fl_run_dir_claim(opt, &c.lock, c.prog.log, &c.restart) : 0;
    if (!status && c.lead) status = fl_run_dir_check_files(opt->out);
    /* a restarted run (no checkpoint to resume) is a new run: --resume of it reads nothing */
    fl_train_options fresh;
    if (c.restart && opt->resume) {
        fresh = *opt;
        fresh.resume = NULL;
        opt = c.opt = &fresh;
    }
    if (!status) status = load_data(&c, tok, res);
    if (status) { run_free(&c); return status; }
    c.pack = (fl_pack_options){.T = opt->seq, .packing = !opt->no_packing, .truncate = opt->truncate,
                               .shuffle = !opt->no_shuffle, .seed = (uint64_t)opt->seed};
    fl_pack_options eval_pack = c.pack;
    eval_pack.shuffle = 0;
    if (!c.pref) fl_rows_build(&c.eval_rows, c.eval_ds, c.eval_idx, c.n_eval, &eval_pack, 0);
    int have_eval = c.pref ? c.pref->n_eval > 0 : c.eval_rows.n_rows > 0;

    /* steps and schedule */
    fl_train_state st = {.seed = (uint64_t)opt->seed, .n_params = m->lora.n};
    if (!c.pref) fl_rows_build(&c.rows, &c.train_ds, c.train_idx, c.n_train, &c.pack, 0);
    if (!epoch_rows(&c)) { run_free(&c); return fl_input_error("%s: no training rows (every document lacks target tokens)", opt->data); }
    size_t rows_per_step = (size_t)opt->batch * opt->grad_accum * (size_t)dist->size;
    double total_d = opt->max_steps > 0 ? opt->max_steps
                     : c.pref ? ceil(opt->epochs * (double)ceil_div(epoch_rows(&c), rows_per_step))
                              : count_steps(&c, opt->epochs, rows_per_step);
    if (total_d > FL_TRAIN_MAX_STEPS) { /* (int) of a larger double is undefined; checkpoints cap steps at 2^30 */
        status = fl_input_error("--epochs %g over %zu rows of %zu per step is %.0f steps; at most %d are supported",
                                opt->epochs, epoch_rows(&c), rows_per_step, total_d, FL_TRAIN_MAX_STEPS);
        run_free(&c);
        return status;
    }
    int total = total_d < 1 ? 1 : (int)total_d;
    fl_lr_schedule sched = {.lr = opt->lr, .min_lr_ratio = opt->min_lr_ratio, .total_steps = total,
                            .warmup = fl_sched_warmup_steps(opt->warmup, opt->warmup_ratio, total)};
    fl_sched_parse(opt->schedule, &sched.kind);
    fl_adamw_config adam = {.lr = opt->lr, .beta1 = opt->beta1, .beta2 = opt->beta2, .eps = opt->adam_eps,
                            .weight_decay = opt->weight_decay, .max_grad_norm = opt->clip};

    /* what this run depends on, recorded in its checkpoints and compared on --resume */
    fl_train_state now = {0};
    if (c.lead) {
        now.data_digest = c.pref ? fl_pref_run_digest(c.pref)
                                 : fl_run_inputs_data_digest(&c.eval_ds_own, fl_run_inputs_data_digest(&c.train_ds, 0));
        if (opt->model) status = fl_weights_digest(opt->model, &now.weights_digest);
        fl_run_inputs_options(opt, now.options, sizeof now.options);
    }
    c.ckpt_root = fl_path_join(opt->out, "checkpoints");
    c.svg_path = fl_path_join(opt->out, "loss.svg");
    if (!status && opt->resume && c.lead) {
        char *dir = NULL;
        status = fl_checkpoint_find(opt->resume, &dir);
        if (!status) status = fl_checkpoint_load(dir, m, &st);
        if (!status && st.seed != (uint64_t)opt->seed)
            status = fl_input_error("%s: the checkpoint was made with --seed %llu, this run has %llu", dir,
                                    (unsigned long long)st.seed, (unsigned long long)opt->seed);
        if (!status && st.rows_per_step && st.rows_per_step != rows_per_step) /* else data order and schedule change */
            status = fl_input_error("%s: the checkpoint's run took %llu rows per step (%llu rank%s); this run takes %zu "
                                    "(--batch %d x --grad-accum %d x %d rank%s): resume with the same rows per step",
                                    dir, (unsigned long long)st.rows_per_step, (unsigned long long)st.world_size,
                                    st.world_size == 1 ? "" : "s", rows_per_step, opt->batch, opt->grad_accum,
                                    dist->size, dist->size == 1 ? "" : "s");
        if (!status && st.epoch != 0 && c.pref) fl_pref_run_epoch(c.pref, opt, st.epoch);
        if (!status && st.epoch != 0 && !c.pref) {
            fl_rows_free(&c.rows);
            fl_rows_build(&c.rows, &c.train_ds, c.train_idx, c.n_train, &c.pack, st.epoch);
        }
        if (!status && st.row > epoch_rows(&c))
            status = fl_input_error("%s: the checkpoint's data position (row %llu) is past this data's %zu rows; same "
                                    "--data and options?", dir, (unsigned long long)st.row, epoch_rows(&c));
        if (!status && st.step > total) /* the run would "finish" with the later adapter, silently */
            status = fl_input_error("%s: the checkpoint is at step %d, past this run's %d steps (--max-steps %d): give "
                                    "--max-steps %d or more to continue it, or start from its adapter with --adapter",
                                    dir, st.step, total, opt->max_steps, st.step);
        if (!status) status = fl_run_inputs_compare(dir, &st, &now, opt, c.prog.log);
        if (!status) progress_message(&c.prog, "resuming from %s at step %d (epoch %llu, row %llu)\n", dir, st.step,
                                      (unsigned long long)st.epoch, (unsigned long long)st.row);
        free(dir);
    }
    if (c.lead) {
        if (!status && (opt->overwrite || c.restart)) fl_run_dir_clear(opt, c.ckpt_root);
        /* a resumed older step: the later checkpoints are a branch this run replaces */
        if (!status && opt->resume) status = fl_checkpoint_abandon_after(c.ckpt_root, st.step, c.prog.log);
        char *config_path = fl_path_join(opt->out, "train_config.json");
        if (!status) status = fl_train_options_save_json(opt, config_path);
        free(config_path);
        if (!status) status = fl_metrics_open(&c.metrics, opt->out, opt->resume ? st.step : -1);
        if (!status && !strcmp(opt->report_to, "tensorboard")) {
            char *options = fl_train_options_json(opt);
            status = fl_metrics_open_tensorboard(&c.metrics, opt->out, opt->resume ? st.step : -1, options);
            free(options);
        }
    }
    status = fl_dist_setup_done(status);
    if (!status && dist->active) { /* rank 0 alone looked at OUT: a restart drops --resume on every rank */
        fl_dist_broadcast_host(&c.restart, sizeof c.restart, "whether the run starts again");
        if (c.restart && opt->resume) {
            fresh = *opt;
            fresh.resume = NULL;
            opt = c.opt = &fresh;
        }
    }
    if (!status && dist->active) status = share_start(&c, &st);
    if (status) { run_free(&c); return status; }
    st.rows_per_step = rows_per_step;
    st.world_size = (uint64_t)dist->size;
    st.data_digest = now.data_digest;
    st.weights_digest = now.weights_digest;
    memcpy(st.options, now.options, sizeof st.options);

    /* after every input check: a bad input stays one line */
    if (opt->seq > m->cfg.max_position_embeddings)
        progress_message(&c.prog, "note: --seq %d is longer than the model's max_position_embeddings (%d): positions "
                         "past it are outside what its RoPE%s was made for\n", opt->seq, m->cfg.max_position_embeddings,
                         m->cfg.rope_llama3 || m->cfg.rope_yarn || m->cfg.rope_longrope ? " scaling" : "");
    if (c.pref)
        progress_message(&c.prog,
                         "%s: %zu preference pairs (%zu bad rows skipped); eval: %zu pairs\n"
                         "%d steps of %d x %d pairs (%zu per epoch), beta %g, lr %g %s (warmup %d), LoRA r %d alpha %g on "
                         "%zu parameters\n",
                         opt->objective, c.pref->n_train, res->n_bad_lines, c.pref->n_eval, total, opt->grad_accum,
                         opt->batch, ceil_div(epoch_rows(&c), rows_per_step), opt->beta, opt->lr, opt->schedule,
                         sched.warmup, m->lora_cfg.rank, m->lora_cfg.alpha, m->lora.n);
    else progress_message(&c.prog,
                     "train: %zu documents (%zu bad lines skipped), %zu rows of %d per epoch%s; eval: %zu documents, %zu rows\n"
                     "%d steps of %d x %d rows%s (%zu per epoch, the last with the %zu rows left), lr %g %s (warmup %d), "
                     "LoRA r %d alpha %g on %zu parameters\n",
                     c.n_train, res->n_bad_lines, c.rows.n_rows, opt->seq, opt->no_packing ? "" : " (packed)", c.n_eval,
                     c.eval_rows.n_rows, total, opt->grad_accum, opt->batch, ranks_note(dist),
                     ceil_div(c.rows.n_rows, rows_per_step),
                     c.rows.n_rows - (ceil_div(c.rows.n_rows, rows_per_step) - 1) * rows_per_step, opt->lr, opt->schedule,
                     sched.warmup, m->lora_cfg.rank, m->lora_cfg.alpha, m->lora.n);
    if (c.prog.log) fl_model_print_memory(m, c.pref ? 2 * opt->batch : opt->batch, opt->seq, c.prog.log);
    if (!opt->dtype && !strncmp(m->be->name, "cpu", 3)) { /* the default, and why */
        const char *why;
        fl_cpu_default_dtype(&why);
        progress_message(&c.prog, "%s\n", why);
    }
    if (!strncmp(m->be->name, "cpu", 3))
        progress_message(&c.prog, "CPU GEMMs: %s\n", fl_cpu_gemm_name(m->be));

    if (have_eval && !opt->resume) do_eval(&c, 0, &res->first_eval_loss);

    /* the step's rows: grad_accum micro-batches of B rows */
    int B = opt->batch, T = opt->seq, A = opt->grad_accum * dist->size; /* micro-batches of a step, all ranks */
    size_t N = (size_t)B * T;
    int32_t *buf = fl_malloc(4 * N * (size_t)A * sizeof(int32_t));
    fl_batch *micro = fl_calloc((size_t)A, sizeof *micro);
    struct sigaction sa = {0}, old_sa;
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    interrupted = 0;
    sigaction(SIGINT, &sa, &old_sa);

    double train_time = 0, last_eval = NAN;
    size_t run_tokens = 0;
    int start_step = st.step, saved_at = -1, rc = 0;
    while (st.step < total) {
        double t0 = now_s();
        if (st.row >= epoch_rows(&c)) { /* next epoch: a fresh shuffle */
            st.epoch++;
            st.row = 0;
            if (c.pref) {
                fl_pref_run_epoch(c.pref, opt, st.epoch);
            } else {
                fl_rows_free(&c.rows);
                fl_rows_build(&c.rows, &c.train_ds, c.train_idx, c.n_train, &c.pack, st.epoch);
            }
        }
        /* up to A micro-batches of B rows from this epoch; its last step takes what is left */
        int n_micro = 0;
        size_t step_rows = 0;
        size_t pref_row = st.row;
        if (c.pref) { /* pairs: the step takes rows_per_step of them, or what is left of the epoch */
            step_rows = epoch_rows(&c) - st.row < rows_per_step ? epoch_rows(&c) - st.row : rows_per_step;
            st.row += step_rows;
        }
        while (!c.pref && n_micro < A && st.row < c.rows.n_rows) {
            int32_t *base = buf + 4 * N * (size_t)n_micro;
            int32_t *ids = base, *targets = base + N, *pos = base + 2 * N, *seg = base + 3 * N;
            fill_rows(&c.rows, &c.train_ds, st.row, B, c.rows.n_rows, ids, targets, pos, seg);
            size_t taken = c.rows.n_rows - st.row < (size_t)B ? c.rows.n_rows - st.row : (size_t)B;
            st.row += taken;
            step_rows += taken;
            micro[n_micro++] = (fl_batch){.B = B, .T = T, .ids = ids, .targets = targets, .pos = pos, .seg_start = seg};
        }
        double epoch_pos = (double)st.epoch + (double)st.row / (double)epoch_rows(&c);
        char partial[96] = "";
        if (step_rows < rows_per_step) snprintf(partial, sizeof partial, " (end of epoch: %zu of %zu rows)", step_rows, rows_per_step);
        fl_dist_test_fault(st.step + 1);
        double lr = fl_lr_at(&sched, st.step), norm;
        adam.lr = (float)lr;
        fl_step_stats s;
        fl_pref_metrics pm;
        int stop_agreed = 0;
        if (c.pref) {
            /* the host turns the token losses into the objective, so this step reads back each micro-batch */
            fl_pref_trainer_step(&c.pref->trainer, m, &c.pref->train_set, &c.pref->ref_train, c.pref->order + pref_row,
                                 step_rows, &pm);
            s = (fl_step_stats){.loss = pm.loss, .n_counted = pm.n_tokens};
            norm = fl_model_grad_norm(m); /* cached: the optimizer step clips with the same value */
        } else if (!dist->active) {
            /* the whole step on the backend, read back once; a non-finite loss or norm left the
             * parameters as they were (grad_clip_scale), and the run stops below */
            s = fl_model_train_step(m, micro, n_micro, &adam, &norm);
        } else {
            s = fl_train_accumulate_share(m, micro, n_micro, dist->rank, dist->size);
            /* several ranks stop after the same step: on the Ctrl-C seen by any rank at the sum (a later one waits a step) */
            stop_agreed = sum_over_ranks(m, &s, interrupted, st.step + 1);
            norm = fl_model_grad_norm(m); /* cached: the optimizer step clips with the same value */
        }
        if (opt->inject_nan_step == st.step + 1) s.loss = NAN;
        if (!isfinite(s.loss) || !isfinite(norm)) {
            progress_message(&c.prog, "step %d: %s is %s; stopping. The last good checkpoint is in %s (resume from it "
                             "with a lower --lr or more --warmup).\n", st.step + 1,
                             !isfinite(s.loss) ? "the loss" : "the gradient norm",
                             isnan(!isfinite(s.loss) ? s.loss : norm) ? "NaN" : "Inf", c.ckpt_root);
            if (c.lead) fl_metrics_write_svg(&c.metrics, c.svg_path, "fastlora train: loss (stopped: NaN/Inf)");
            rc = fl_fail(FL_ERR_INTERNAL, "step %d: non-finite loss or gradients (loss %g, grad norm %g)", st.step + 1,
                         s.loss, norm);
            break;
        }
        if (dist->active || c.pref) fl_model_optimizer_step(m, &adam);
        st.step++;
        st.adam_step = m->adam_step;
        st.micro_step = m->micro_step;
        st.tokens += s.n_counted;
        run_tokens += s.n_counted;
        double dt = now_s() - t0;
        train_time += dt;
        double tps = train_time > 0 ? run_tokens / train_time : 0;
        fl_metric_extra extra;
        if (c.pref) fl_pref_run_extra(c.pref, &pm, &extra);
        if (c.lead) fl_metrics_train(&c.metrics, st.step, epoch_pos, s.loss, lr, norm, s.n_counted, tps, c.pref ? &extra : NULL);
        res->last_loss = s.loss;
        char eta[32];
        format_duration(eta, sizeof eta, (total - st.step) * (train_time / (st.step - start_step)));
        if (c.prog.tty) {
            fprintf(c.prog.log, "\rstep %d/%d | epoch %.2f | loss %.4f | lr %.2e | %.0f tok/s | ETA %s%s   ", st.step,
                    total, epoch_pos, s.loss, lr, tps, eta, partial);
            fflush(c.prog.log);
            c.prog.line_open = 1;
        } else if (opt->log_every && (st.step % opt->log_every == 0 || st.step == 1 || st.step == total)) {
            progress_message(&c.prog, "step %d/%d epoch %.2f loss %.4f lr %.3e grad_norm %.3f %.0f tok/s ETA %s%s\n",
                             st.step, total, epoch_pos, s.loss, lr, norm, tps, eta, partial);
        }
        if (have_eval && opt->eval_every && st.step % opt->eval_every == 0) do_eval(&c, st.step, &last_eval);
        int stop = (dist->active ? stop_agreed : interrupted) || opt->stop_at_step == st.step;
        if ((opt->save_every && st.step % opt->save_every == 0) || stop || st.step == total) {
            if (have_eval && st.step == total && !(opt->eval_every && st.step % opt->eval_every == 0))
                do_eval(&c, st.step, &last_eval);
            rc = c.lead ? save_checkpoint(&c, &st) : 0;
            if (dist->active) rc = lead_status(rc, "the checkpoint", st.step);
            if (!rc && dist->active) rc = check_ranks_agree(m, st.step);
            saved_at = st.step;
            if (rc) break;
        }
        if (stop) {
            progress_message(&c.prog, "interrupted at step %d; resume with --resume %s\n", st.step, opt->out);
            rc = 130;
            break;
        }
    }
    (void)saved_at;
    sigaction(SIGINT, &old_sa, NULL);
    if (rc == 0) {
        res->last_eval_loss = last_eval;
        if (c.lead) rc = fl_adapter_save(opt->out, &m->lora, &m->cfg, &m->lora_cfg, opt->model);
        if (!rc && c.lead) rc = fl_metrics_write_svg(&c.metrics, c.svg_path, "fastlora train: loss");
        if (dist->active) rc = lead_status(rc, "the adapter", st.step);
        char replayed[64] = "";
        if (fl_model_replayed_steps(m))
            snprintf(replayed, sizeof replayed, " (%d replayed from a CUDA graph)", fl_model_replayed_steps(m));
        if (!rc && st.step == start_step) /* resumed at the final step: no loss of this run to show */
            progress_message(&c.prog, "done: the checkpoint was already at the final step %d; nothing trained, its "
                             "adapter written to %s\n", st.step, opt->out);
        else if (!rc) progress_message(&c.prog, "done: %d steps%s, last loss %.4f%s; adapter in %s\n", st.step, replayed,
                                       res->last_loss, have_eval ? "" : " (no eval set)", opt->out);
    }
    res->steps = st.step;
    res->tokens = st.tokens;
    free(buf);
    free(micro);
    run_free(&c);
    return rc;
}
