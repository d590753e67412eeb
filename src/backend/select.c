/* select.c — picking a backend by name: "cpu", "cuda", or "auto" (CUDA when this build has it and
 * a GPU answers, else the CPU). The CUDA backend exists only in builds made with nvcc
 * (FL_HAVE_CUDA); without a GPU or driver, "auto" quietly falls back to the CPU. */
#include <string.h>

#include "backend/backend.h"
#include "common/error.h"

#ifdef FL_HAVE_CUDA
const fl_backend *fl_backend_cuda(void);
#endif

int fl_backend_select(const char *device, const fl_backend **out) {
    *out = NULL;
    if (!device || !strcmp(device, "cpu")) {
        *out = fl_backend_cpu();
        return 0;
    }
    if (!strcmp(device, "auto") || !strcmp(device, "cuda")) {
#ifdef FL_HAVE_CUDA
        *out = fl_backend_cuda();
#endif
        if (*out) return 0;
        if (!strcmp(device, "auto")) {
            *out = fl_backend_cpu();
            return 0;
        }
#ifdef FL_HAVE_CUDA
        return fl_input_error("--device cuda: no usable CUDA GPU (driver or device missing); use --device cpu");
#else
        return fl_input_error("--device cuda: this build has no CUDA backend (build where nvcc exists); use --device cpu");
#endif
    }
    return fl_input_error("--device '%s' is not known (expected cpu, cuda or auto)", device);
}
