/* select.c — picking a backend by device and weight dtype. "auto" is CUDA when this build has it
 * and a GPU answers, else the CPU. The CUDA backend exists only in builds made with nvcc
 * (FL_HAVE_CUDA); without a GPU or driver, "auto" quietly falls back to the CPU. On the CPU the
 * default is bf16 weights (fast, the numerics of a bf16 GPU run); "f32" is the exact reference. */
#include <string.h>

#include "backend/backend.h"
#include "common/error.h"

#ifdef FL_HAVE_CUDA
const fl_backend *fl_backend_cuda(void);
#endif

static int cpu_for_dtype(const char *dtype, const fl_backend **out) {
    if (!dtype || !strcmp(dtype, "bf16")) { *out = fl_backend_cpu_bf16(); return 0; }
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
