/* gpu_probe.c — asks the CUDA runtime (not nvidia-smi, which a GPU machine need not have on PATH)
 * whether a usable GPU is there, for scripts/device-check's first line. Prints one line:
 *   "GPU 0: NAME (sm_XY, N SMs, M GiB), driver D, runtime R"   exit 0
 *   "no GPU: cudaGetDeviceCount: ERROR"                         exit 1
 * Plain C against libcudart, compiled by device-check itself with cc (no nvcc, no Makefile); not
 * part of the library or the tests. */
#include <stdio.h>

#include <cuda_runtime_api.h>

int main(void) {
    int count = 0, driver = 0, runtime = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count <= 0) {
        printf("no GPU: cudaGetDeviceCount: %s\n", err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
        return 1;
    }
    struct cudaDeviceProp p;
    err = cudaGetDeviceProperties(&p, 0);
    if (err != cudaSuccess) {
        printf("no GPU: cudaGetDeviceProperties: %s\n", cudaGetErrorString(err));
        return 1;
    }
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    printf("GPU 0: %s (sm_%d%d, %d SMs, %.1f GiB), %d device(s), driver %d.%d, runtime %d.%d\n", p.name, p.major,
           p.minor, p.multiProcessorCount, p.totalGlobalMem / 1073741824.0, count, driver / 1000, driver % 1000 / 10,
           runtime / 1000, runtime % 1000 / 10);
    return 0;
}
