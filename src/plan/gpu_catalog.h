/* gpu_catalog.h — the GPU catalog: data/gpus.csv (specs, driver names, indicative prices) read
 * into an array of fl_gpu_spec, with user CSVs that add rows or override fields of existing ones.
 *
 * Usage:
 *   fl_gpu_catalog c;
 *   if (fl_gpu_catalog_load_default(&c)) { puts(fl_last_error()); ... }
 *   fl_gpu_catalog_merge_file(&c, "my-gpus.csv");            // optional: add / override rows
 *   const fl_gpu_spec *g = fl_gpu_catalog_find(&c, "NVIDIA H100 80GB HBM3");   // driver name
 *   if (g) printf("%s: %.0f TFLOPS bf16 dense\n", g->name, g->bf16_dense_tflops);
 *   fl_gpu_catalog_free(&c);
 *
 * TFLOPS are DENSE tensor-core rates (vendor sheets print sparse ones; see data/GPUS-SOURCES.md).
 * A rate of 0 means the card has no such tensor path (T4/V100: no bf16). Numeric fields that can
 * be unknown are < 0 when unknown (usable_mib, price_usd_hr, year, sms, l2_mb).
 * Not the planner (plan/plan.h) and not a device query: nothing here talks to a driver.
 */
#ifndef FL_GPU_CATALOG_H
#define FL_GPU_CATALOG_H

typedef struct {
    char name[128];          /* "NVIDIA H100 SXM5 80GB HBM3" — the key rows override by */
    char arch[32];           /* "Hopper" */
    double vram_gb, mem_bw_gbs;                        /* decimal GB, GB/s */
    double bf16_dense_tflops, fp16_dense_tflops, fp8_dense_tflops, tf32_dense_tflops;
    double tdp_w;
    double price_usd_hr;     /* <0 unknown */
    /* ---- beyond the core fields ---- */
    char short_name[48];     /* "H100 SXM" — tables and charts */
    char aliases[256];       /* driver names, ';'-separated: "NVIDIA H100 80GB HBM3" */
    char sm[16];             /* "sm_90" */
    char mem_type[16];       /* "HBM3" */
    double usable_mib;       /* memory the driver reports (nvidia-smi MiB); <0 unknown */
    double fp32_tflops;      /* non-tensor f32 */
    double sms, l2_mb, year; /* <0 unknown */
    char interconnect[128];
    double nvlink_gbs;       /* NVLink per GPU, both directions summed as NVIDIA quotes it; <0 none */
    double nvlink_gpus;      /* the most GPUs one NVLink domain joins (8: NVSwitch HGX, 2: a bridge); <0 none */
    double pcie_gbs;         /* the card's PCIe link, both directions summed (Gen4 x16: 64); <0 unknown */
    char target_use[128];
    char ecc[64];
    char source[1024];
    char notes[1024];
    char origin[256];        /* "data/gpus.csv:5" or "mine.csv:2 (override)" — where the row came from */
} fl_gpu_spec;

typedef struct {
    fl_gpu_spec *gpus;
    int n;
} fl_gpu_catalog;

/* Reads a catalog CSV (RFC 4180: quoted fields may hold commas, newlines and doubled quotes).
 * The header names the columns (any order; `name` required; price_usd_hr_indicative is accepted
 * for price_usd_hr). Bad rows are input errors "file:line: column: expected ..., got '...'"; then c is
 * left empty. */
int fl_gpu_catalog_load(fl_gpu_catalog *c, const char *csv_path);
/* data/gpus.csv of the project: $FASTLORA_DATA/gpus.csv, then <dir of /proc/self/exe>/../data,
 * <dir>/../../data, then ./data. The error lists the places tried. */
int fl_gpu_catalog_load_default(fl_gpu_catalog *c);
/* Merges a user CSV into c: a row whose name (or short_name) matches an existing row overrides
 * only the fields it gives (non-empty cells, prices too); other rows are added and must give
 * name, vram_gb, mem_bw_gbs and a bf16 or fp16 rate. On an error, the rows before the bad one are
 * merged already (c stays valid; free it as usual). */
int fl_gpu_catalog_merge_file(fl_gpu_catalog *c, const char *csv_path);
/* The row for a device name. Exact (case-insensitive) name, short name or alias first; otherwise
 * token matching ("NVIDIA H200" -> H200 SXM, "NVIDIA A100-SXM4-40GB" -> A100 40GB): the query's
 * model token (the first one with a digit, e.g. "h100", "4090") must appear in the row; most
 * shared tokens wins, ties go to the earlier row. NULL when nothing matches. */
const fl_gpu_spec *fl_gpu_catalog_find(const fl_gpu_catalog *c, const char *device_name);
void fl_gpu_catalog_free(fl_gpu_catalog *c);

/* The CSV columns, for `gpus --sort COLUMN` and JSON output: count, name, whether the column is
 * text, and a row's value (text, or number with -1 for unknown). Index -1 for an unknown name. */
int fl_gpu_column_count(void);
const char *fl_gpu_column_name(int i);
int fl_gpu_column_index(const char *name);
int fl_gpu_column_is_text(int i);
const char *fl_gpu_column_text(const fl_gpu_spec *g, int i);
double fl_gpu_column_number(const fl_gpu_spec *g, int i);

/* The tensor rate the engine's bf16 path gets on this card: bf16 dense, else fp16 dense (no bf16
 * tensor cores: T4, V100), in TFLOPS. */
double fl_gpu_train_tflops(const fl_gpu_spec *g);
/* Bytes usable for allocations: usable_mib when known, else vram_gb * 1e9 * 0.97. */
double fl_gpu_usable_bytes(const fl_gpu_spec *g);

#endif
