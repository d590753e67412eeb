/* select.c — picking a backend by device and weight dtype. "auto" is CUDA when this build has it
 * and a GPU answers, else the CPU. The CUDA backend exists only in builds made with nvcc
 * (FL_HAVE_CUDA); without a GPU or driver, "auto" quietly falls back to the CPU. On the CPU "f32"
 * is the exact reference and "bf16" halves the weights' memory with the numerics of a bf16 GPU
 * run; without --dtype the faster of the two on this CPU (fl_cpu_default_dtype_for). */
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/gemm_bf16.h"
#include "backend/cpu/gemm_onednn.h"
#include "common/error.h"

/* Known, not measured at start-up: a default that changed with the machine's load would change a
 * run's numerics from one start to the next. The figures are fastlora's own (docs/BENCHMARKS.md,
 * SmolLM2-135M 4 x 256, the same machine minutes apart). */
const char *fl_cpu_default_dtype_for(int isa, int amd, int amx_gemm, const char **why) {
    const char *dtype = "f32", *line;
    if (amx_gemm) {
        dtype = "bf16";
        line = "bf16 weights, the default on this CPU: its bf16 GEMMs run on AMX tiles through oneDNN (Sapphire Rapids, "
               "2 cores: 1.23 TFLOP/s, where fastlora's own bf16 kernel reached 0.17; docs/CPU-GEMM.md); --dtype f32 for "
               "the exact reference";
    } else if (isa >= FL_CPU_ISA_AVX512_BF16 && amd) {
        dtype = "bf16";
        line = "bf16 weights, the default on this CPU: AMD's AVX512_BF16 dot product does twice the work of an f32 "
               "FMA (Zen 5: 872 vs 355 tok/s); --dtype f32 for the exact reference";
    } else if (isa >= FL_CPU_ISA_AVX512_BF16) {
        line = "f32 weights, the default on this CPU: its AVX512_BF16 dot product runs at the f32 FMA rate, so bf16 "
               "weights only save memory (Sapphire Rapids: 412 vs 275 tok/s); --dtype bf16 halves the weights";
    } else if (isa >= FL_CPU_ISA_AVX2) {
        line = "f32 weights, the default on this CPU: without AVX512_BF16 the bf16 GEMM widens its operands to f32 "
               "first (an AVX2 EPYC: 51.1 vs 44.3 tok/s on qwen2.5-0.5b); --dtype bf16 halves the weights";
    } else {
        line = "f32 weights, the default on this CPU: without AVX2 or AVX-512 the portable bf16 GEMM widens to f32 "
               "first; --dtype bf16 halves the weights";
    }
    if (why) *why = line;
    return dtype;
}

const char *fl_cpu_default_dtype(const char **why) {
    int amd = 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    amd = __builtin_cpu_is("amd");
#endif
    int amx_gemm = fl_gemm_bf16_takes_onednn(4096, 4096, 4096) && fl_onednn_has_amx();
    return fl_cpu_default_dtype_for((int)fl_cpu_isa_active(), amd, amx_gemm, why);
}

const char *fl_cpu_gemm_name(const fl_backend *be) {
    return be->weight_size == 2 ? fl_gemm_bf16_path() : fl_gemm_f32_path();
}

#ifdef FL_HAVE_CUDA
const fl_backend *fl_backend_cuda(void);
#endif

static int cpu_for_dtype(const char *dtype, const fl_backend **out) {
    if (!dtype) dtype = fl_cpu_default_dtype(NULL);
    if (!strcmp(dtype, "bf16")) { *out = fl_backend_cpu_bf16(); return 0; }
    if (!strcmp(dtype, "f32")) { *out = fl_backend_cpu(); return 0; }
    return fl_input_error("--dtype '%s' is not known (expected bf16 or f32)", dtype);
}

int fl_backend_select_dtype(const char *device, const char *dtype, const fl_backend **out) {
    *out = NULL;
    if (!device || !strcmp(device, "cpu")) return cpu_for_dtype(dtype, out);
    if (!strcmp(device, "auto") || !strcmp(device, "cuda")) {
        if (dtype && strcmp(dtype, "bf16") != 0 && !strcmp(device, "cuda"))
            return fl_input_error("--dtype %s: the CUDA backend runs bf16 weights only (use --dtype bf16 or --device cpu)", dtype);
#ifdef FL_HAVE_CUDA
        if (!dtype || !strcmp(dtype, "bf16")) *out = fl_backend_cuda();
#endif
        if (*out) return 0;
        if (!strcmp(device, "auto")) return cpu_for_dtype(dtype, out);
#ifdef FL_HAVE_CUDA
        return fl_input_error("--device cuda: no usable CUDA GPU (driver or device missing); use --device cpu");
#else
        return fl_input_error("--device cuda: this build has no CUDA backend (build where nvcc exists); use --device cpu");
#endif
    }
    return fl_input_error("--device '%s' is not known (expected cpu, cuda or auto)", device);
}

int fl_backend_select(const char *device, const fl_backend **out) { return fl_backend_select_dtype(device, NULL, out); }
