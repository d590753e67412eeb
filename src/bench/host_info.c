/* host_info.c — the machine around a bench run (host_info.h): /proc readers and two commands. */
#include "bench/host_info.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* A "Key:   value kB" line of a /proc file, in bytes; 0 when absent. */
static size_t proc_kb_field(const char *path, const char *key) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[256];
    size_t bytes = 0, klen = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, klen) && line[klen] == ':') {
            bytes = (size_t)strtoull(line + klen + 1, NULL, 10) * 1024;
            break;
        }
    fclose(f);
    return bytes;
}

size_t fl_host_peak_rss_bytes(void) {
    size_t hwm = proc_kb_field("/proc/self/status", "VmHWM");
    if (hwm) return hwm;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (size_t)ru.ru_maxrss * 1024;
}

void fl_host_reset_peak_rss(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return;
    fputs("5", f);
    fclose(f);
}

size_t fl_host_available_bytes(void) {
    return proc_kb_field("/proc/meminfo", "MemAvailable") + proc_kb_field("/proc/self/status", "VmRSS");
}

/* First line of a command's standard output, trailing newline removed; "" on failure. */
static void command_output(const char *cmd, char *out, size_t cap) {
    out[0] = 0;
    FILE *p = popen(cmd, "r");
    if (!p) return;
    if (!fgets(out, (int)cap, p)) out[0] = 0;
    out[strcspn(out, "\n")] = 0;
    if (pclose(p) != 0) out[0] = 0;
}

void fl_host_fastlora_version(char *out, size_t cap) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    out[0] = 0;
    const char *given = getenv("FASTLORA_VERSION");
    if (given && given[0]) {
        snprintf(out, cap, "%s", given);
        return;
    }
    if (n > 0) {
        exe[n] = 0;
        for (int up = 0; up < 2; up++) {
            char *slash = strrchr(exe, '/');
            if (slash) *slash = 0;
        }
        if (!strchr(exe, '\'')) {
            char cmd[PATH_MAX + 128];
            snprintf(cmd, sizeof cmd, "git -C '%s' describe --always --dirty --tags 2>/dev/null", exe);
            command_output(cmd, out, cap);
        }
    }
#ifdef FL_VERSION
    if (!out[0]) snprintf(out, cap, "%s", FL_VERSION);
#endif
    if (!out[0]) snprintf(out, cap, "unknown");
}

void fl_host_nvidia_driver_version(char *out, size_t cap) {
    out[0] = 0;
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "NVRM version", strlen("NVRM version")) != 0) continue;
        char *kmod = strstr(line, "Kernel Module"), version[64];
        if (kmod && sscanf(kmod + strlen("Kernel Module"), " %63s", version) == 1) snprintf(out, cap, "%s", version);
        break;
    }
    fclose(f);
}

void fl_host_cuda_driver_version(char *out, size_t cap) {
    command_output("nvidia-smi 2>/dev/null | grep -o 'CUDA Version: *[0-9.]*' | grep -o '[0-9.]*$'", out, cap);
}
