# fastlora build. `make` builds build/fastlora (CPU backend); `make test` builds and runs the test
# suite, again under each CPU kernel level below this CPU's (isa-test), the bf16 backend's tests
# on oneDNN's matmul where the build has it (onednn-test), then the AddressSanitizer
# run of the bad-input and CPU-kernel tests and a clang compile of the per-function-ISA kernels for
# CPUs without AVX-512 or AVX (isa-compile-check); `make bench` runs the README's
# benchmark; `make fuzz` runs the libFuzzer harnesses of fuzz/ (docs/FUZZING.md). Every source
# under src/ is picked up by its folder; no list to keep in sync.
CC      ?= gcc
# OPT is the optimization/instrumentation part (the sanitizer build swaps it); CFLAGS adds the rest.
OPT     ?= -O3 -march=native
# -fno-math-errno lets `omp simd` loops call the vector expf; nothing here reads errno after libm.
CFLAGS  += $(OPT) -std=c11 -D_GNU_SOURCE -Wall -Wextra -fopenmp -fno-math-errno -Isrc -MMD -MP
# OpenBLAS's OpenMP build, so BLAS and our kernels share one thread pool (the pthread build's
# threads spin against OpenMP's and cost ~40% of a step on 2 cores).
BLAS_DIR ?= /usr/lib/x86_64-linux-gnu/openblas-openmp
BLAS_LIBS = -L$(BLAS_DIR) -Wl,-rpath,$(BLAS_DIR) -lopenblas
LDLIBS  += -ljansson -lyaml -lpcre2-8 -lcrypto $(BLAS_LIBS) -lm -fopenmp
BUILD   ?= build

LIB_SRC  := $(filter-out src/cli/main.c,$(wildcard src/*/*.c src/*/*/*.c))
CLI_SRC  := src/cli/main.c
TEST_SRC := $(wildcard tests/*.c)

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)

.PHONY: all test bench clean setup asan-test isa-test onednn-test isa-compile-check
all: $(BUILD)/fastlora $(BUILD)/fastlora_tests

# Installs the build dependencies once per build folder (scripts/setup is a no-op when all is there).
setup: $(BUILD)/.setup-done
$(BUILD)/.setup-done: scripts/setup
	@mkdir -p $(BUILD)
	@$(if $(DEPS_PREFIX),:,scripts/setup)
	@touch $@

$(BUILD)/%.o: %.c | $(BUILD)/.setup-done
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# The CPU kernels: -fno-trapping-math lets GCC if-convert the float compares in fl_expf
# (common/fastmath.h) without AVX-512 masks — on AVX2 targets the softmax, SwiGLU and attention
# loops stay scalar without it (4.6x slower SwiGLU). It changes no result: no reassociation, and
# no floating-point exception is ever read.
$(BUILD)/src/backend/cpu/%.o: CFLAGS += -fno-trapping-math

$(BUILD)/libfastlora.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/fastlora: $(CLI_OBJ) $(BUILD)/libfastlora.a Makefile
	$(CC) $(CFLAGS) $(filter-out Makefile,$^) -o $@ $(LDLIBS)

$(BUILD)/fastlora_tests: $(TEST_OBJ) $(BUILD)/libfastlora.a Makefile
	$(CC) $(CFLAGS) $(filter-out Makefile,$^) -o $@ $(LDLIBS)

test: all
	FASTLORA_BIN=$(BUILD)/fastlora $(BUILD)/fastlora_tests
	$(MAKE) --no-print-directory isa-test
	$(MAKE) --no-print-directory onednn-test
	$(MAKE) --no-print-directory asan-test
	$(MAKE) --no-print-directory isa-compile-check

# The tests of both CPU backends again with every GEMM oneDNN takes sent to it
# (FASTLORA_CPU_GEMM=onednn; gemm_bf16.h), where this build has oneDNN: on a CPU whose default
# leaves oneDNN out (bf16 without AMX, f32 beyond AVX2) its matmuls are checked inside whole
# training steps too — the f32 ones against the Hugging Face fixtures and finite differences.
ONEDNN_TESTS = cpu_bf16,gemm_bf16,gemm_f32,fused,recompute,step,nf4,token_weights,hf_,gradcheck
onednn-test: all
	@if [ "$(ONEDNN)" = 1 ]; then \
	    echo "== FASTLORA_CPU_GEMM=onednn"; \
	    FASTLORA_CPU_GEMM=onednn FASTLORA_BIN=$(BUILD)/fastlora $(BUILD)/fastlora_tests $(ONEDNN_TESTS) || exit 1; \
	else echo "== oneDNN not in this build (libdnnl-dev): onednn-test has nothing to run"; fi

# The suite again with the CPU kernels forced to each level below this CPU's own (FASTLORA_CPU_ISA,
# backend/cpu/cpu_isa.h): an AVX-512 machine also runs the AVX2 and portable paths, so a test that
# only one kernel path passes fails on every machine that can run that path, not only on the CPUs
# whose best path it is.
isa-test: all
	@top=$$($(BUILD)/fastlora_tests --cpu-isa-levels | tail -1); \
	for isa in $$($(BUILD)/fastlora_tests --cpu-isa-levels); do \
	    [ "$$isa" = "$$top" ] && continue; \
	    echo "== FASTLORA_CPU_ISA=$$isa (this CPU: $$top)"; \
	    FASTLORA_CPU_ISA=$$isa FASTLORA_BIN=$(BUILD)/fastlora $(BUILD)/fastlora_tests || exit 1; \
	done

# The CPU kernel files that enable instruction sets per function (__attribute__((target))) compiled
# with clang for x86-64 targets without AVX-512 (v3: AVX2) and without AVX (v2), at -O1 and -O3:
# clang outlines an OpenMP region into a function without the enclosing function's target, where
# passing a wider vector than the build's target is an error — a break that -march=native shows only
# on the CPUs that lack the ISA (the fuzz build on an AVX2 machine), caught here on every machine.
ISA_TARGET_SRC = $(shell grep -l '__attribute__..target' src/backend/cpu/*.c)
# the build's own flags for these files, less its -O / -march and the dependency files
ISA_CHECK_FLAGS = $(filter-out $(OPT) -MMD -MP,$(CFLAGS)) -fno-trapping-math -Wno-psabi
isa-compile-check:
	@if command -v $(FUZZ_CC) >/dev/null 2>&1 && [ "$$(uname -m)" = x86_64 ]; then \
	    echo "== $(FUZZ_CC): the per-function ISA kernels for x86-64-v2 and -v3 at -O1 and -O3"; \
	    for m in x86-64-v2 x86-64-v3; do for o in -O1 -O3; do for f in $(ISA_TARGET_SRC); do \
	        $(FUZZ_CC) $$o -march=$$m $(ISA_CHECK_FLAGS) -c $$f -o /dev/null || { echo "isa-compile-check: $$f fails for -march=$$m $$o"; exit 1; }; \
	    done; done; done; \
	else echo "== isa-compile-check: $(FUZZ_CC) not installed or not x86-64; nothing to check"; fi

# The bad-input tests again under AddressSanitizer + UBSan: malformed files must never crash, nor
# hostile chat templates (the Jinja engine's tests); and
# the CPU kernels' tests (attention tiles, GEMMs, finite differences, whole steps), at every kernel
# level this CPU runs: an out-of-bounds write that leaves the results right is seen only here.
ASAN_TESTS = bad_input,config_mistral3,config_ministral3,mistral3_vlm,cpu_attention,attention_rows,tile_gemm,gradcheck,long_seq,fused,cpu_bf16,gemm_bf16,nf4_gemm,recompute,step,determinism,cpu_isa,jinja,chat_templates,chat_generation,preference,token_losses,token_weights,pref_train_dpo_standard,pref_train_orpo,pref_train_ipo,pref_train_bad_rows,pref_train_packed,io_json
# The kernel tests again at each CPU kernel level below this CPU's (~20 s a level): the AVX2 and
# portable kernels' memory accesses are checked on an AVX-512 machine too.
ASAN_KERNEL_TESTS = cpu_attention,tile_gemm,gradcheck,fused,cpu_bf16,gemm_bf16,nf4_gemm,cpu_isa
asan-test:
	$(MAKE) --no-print-directory BUILD=build-asan OPT="-O1 -g -march=native -fsanitize=address,undefined -fno-omit-frame-pointer" \
	    build-asan/fastlora build-asan/fastlora_tests
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 FASTLORA_BIN=build-asan/fastlora build-asan/fastlora_tests $(ASAN_TESTS)
	@top=$$(build-asan/fastlora_tests --cpu-isa-levels | tail -1); \
	for isa in $$(build-asan/fastlora_tests --cpu-isa-levels); do \
	    [ "$$isa" = "$$top" ] && continue; \
	    echo "== AddressSanitizer, CPU kernels at FASTLORA_CPU_ISA=$$isa (this CPU: $$top)"; \
	    FASTLORA_CPU_ISA=$$isa ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 \
	        build-asan/fastlora_tests $(ASAN_KERNEL_TESTS) || exit 1; \
	done

bench: $(BUILD)/fastlora
	$(BUILD)/fastlora bench

clean:
	rm -rf build build-asan build-fuzz

# ---- dependencies from a private prefix (scripts/fetch-gpu-deps; docs/CUDA.md) -------------------
# DEPS_PREFIX=DIR: Jansson, PCRE2, OpenBLAS and libcrypto unpacked from Debian packages into DIR (no
# install into /, no scripts/setup) on a machine that lacks them. Its include folders (the multiarch
# one holds OpenSSL's opensslconf.h) come first; its libraries
# are linked with DT_RPATH (--disable-new-dtags), which, unlike RUNPATH, also serves the libraries'
# own dependencies (OpenBLAS's libgfortran).
ifneq ($(DEPS_PREFIX),)
DEPS_LIB  := $(DEPS_PREFIX)/usr/lib/x86_64-linux-gnu
BLAS_DIR  := $(DEPS_LIB)/openblas-openmp
CFLAGS    += -I$(DEPS_PREFIX)/usr/include -I$(DEPS_PREFIX)/usr/include/x86_64-linux-gnu \
             -I$(DEPS_PREFIX)/usr/include/x86_64-linux-gnu/openblas-openmp
LDLIBS    := -L$(DEPS_LIB) -Wl,--disable-new-dtags,-rpath,$(DEPS_LIB) $(LDLIBS)
endif

# ---- CUDA (src/backend/cuda/*.cu, dev/cuda/) ----------------------------------------------------
# Built whenever nvcc is on PATH (or CUDA=1); CUDA=0 gives the pure CPU build. Sanitizer builds
# (OPT with -fsanitize) stay CPU-only: nvcc's host objects are not instrumented anyway. The binary
# still runs where no GPU or driver exists (fl_backend_cuda() returns NULL, "auto" picks the CPU).
NVCC      ?= $(shell command -v nvcc 2>/dev/null)
CUDA      ?= $(if $(NVCC),1,0)
ifneq ($(findstring -fsanitize,$(OPT)),)
override CUDA := 0
endif
ifeq ($(CUDA),1)
NVCC      := $(if $(NVCC),$(NVCC),nvcc)
CUDA_HOME ?= $(patsubst %/bin/,%,$(dir $(shell readlink -f $$(command -v $(NVCC)))))
CUDA_LIB  ?= $(CUDA_HOME)/lib64
# sm_80 and sm_90 machine code plus sm_90 PTX for newer GPUs; device-check narrows it to sm_90.
CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
             -gencode arch=compute_90,code=compute_90
NVCCFLAGS ?= -O3 -std=c++17 -lineinfo -Xcompiler -Wall,-Wextra -Xptxas -warn-spills
CU_SRC    := $(wildcard src/backend/cuda/*.cu)
CU_OBJ    := $(CU_SRC:%.cu=$(BUILD)/%.o)
CFLAGS    += -DFL_HAVE_CUDA
LDLIBS    += -L$(CUDA_LIB) -Wl,-rpath,$(CUDA_LIB) -lcublasLt -lcublas -lcudart -lstdc++

$(BUILD)/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $(CUDA_ARCH) -Isrc -MMD -MP -c $< -o $@

$(BUILD)/libfastlora.a: $(CU_OBJ)

# The kernel lab: one standalone program per op (validate against the CPU op, then time).
DEV_SRC := $(wildcard dev/cuda/*.cu)
DEV_BIN := $(DEV_SRC:dev/cuda/%.cu=$(BUILD)/dev/%)
$(BUILD)/dev/%.o: dev/cuda/%.cu dev/cuda/lab.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $(CUDA_ARCH) -Isrc -Idev/cuda -c $< -o $@
$(BUILD)/dev/%: $(BUILD)/dev/%.o $(BUILD)/libfastlora.a
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)
.PRECIOUS: $(BUILD)/dev/%.o
dev-cuda: $(DEV_BIN)
-include $(CU_OBJ:.o=.d)
endif

# ---- MPI and NCCL (src/dist/: data parallel training, docs/DISTRIBUTED.md) ------------------------
# MPI is built in whenever mpicc (Open MPI or MPICH) is found, or MPI=1; MPI=0 leaves it out. Either
# way a plain `fastlora train` calls no MPI function: MPI starts only under a launcher (mpirun, srun).
# scripts/setup installs Open MPI, so it runs before mpicc is looked for: the setup stamp is read
# as a makefile, and once setup has made it, make starts over and finds the fresh mpicc. NCCL (the
# GPU all-reduce) is built in with CUDA when nccl.h is found: the CUDA toolkit's include folder,
# /usr/include, or the nvidia-nccl-cu13 wheel (site-packages/nvidia/nccl; NCCL_HOME overrides).
# Sanitizer builds leave both out. The flags are recorded in $(BUILD)/.dist-flags so that a change
# (MPI installed later, say) recompiles src/dist/.
ifeq ($(filter clean,$(MAKECMDGOALS)),)
-include $(BUILD)/.setup-done
endif
MPICC ?= $(shell command -v mpicc 2>/dev/null)
MPI   ?= $(if $(MPICC),1,0)
ifneq ($(findstring -fsanitize,$(OPT)),)
override MPI := 0
endif
DIST_OBJ := $(filter $(BUILD)/src/dist/%,$(LIB_OBJ))
DIST_CFLAGS :=
ifeq ($(MPI),1)
ifndef MPI_CFLAGS
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null || $(MPICC) --showme:compile 2>/dev/null || \
                      pkg-config --cflags mpich 2>/dev/null)
MPI_LIBS   := $(shell pkg-config --libs ompi-c 2>/dev/null || $(MPICC) --showme:link 2>/dev/null || \
                      pkg-config --libs mpich 2>/dev/null)
endif
DIST_CFLAGS += -DFL_HAVE_MPI $(MPI_CFLAGS)
LDLIBS      += $(MPI_LIBS)
endif
ifeq ($(CUDA),1)
DIST_CFLAGS += -I$(CUDA_HOME)/include
ifndef NCCL_HOME
NCCL_HOME := $(or $(patsubst %/include/nccl.h,%,$(firstword $(wildcard $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h))),\
                  $(shell python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null))
endif
NCCL      ?= $(if $(wildcard $(NCCL_HOME)/include/nccl.h),1,0)
ifeq ($(NCCL),1)
NCCL_LIB  := $(firstword $(foreach d,lib64 lib lib/x86_64-linux-gnu,$(if $(wildcard $(NCCL_HOME)/$(d)/libnccl.so.2),$(NCCL_HOME)/$(d))))
DIST_CFLAGS += -DFL_HAVE_NCCL -I$(NCCL_HOME)/include
LDLIBS      += -L$(NCCL_LIB) -Wl,-rpath,$(NCCL_LIB) -l:libnccl.so.2
endif
endif
$(DIST_OBJ): CFLAGS += $(DIST_CFLAGS)
$(DIST_OBJ): $(BUILD)/.dist-flags
$(BUILD)/.dist-flags: FORCE
	@mkdir -p $(BUILD)
	@echo 'MPI=$(MPI) NCCL=$(NCCL) $(DIST_CFLAGS)' | cmp -s - $@ || echo 'MPI=$(MPI) NCCL=$(NCCL) $(DIST_CFLAGS)' > $@
.PHONY: FORCE
FORCE:

# ---- oneDNN (src/backend/cpu/gemm_onednn.c: the bf16 GEMM on AMX; docs/CPU-GEMM.md) -------------
# Built in when a program using oneDNN compiles and links here (scripts/setup installs libdnnl-dev;
# 2.x or 3.x) — a header without a usable library, or a libdnnl.so needing a newer libstdc++ than
# this machine's, leaves it out — or ONEDNN=1; ONEDNN=0 leaves it out and fastlora's own kernels
# run every GEMM. ONEDNN_HOME=DIR takes it from DIR/include and DIR/lib. Recorded in
# $(BUILD)/.onednn-flags so that a change recompiles gemm_onednn.c. (Probed once per make run: the
# restart after scripts/setup probes again.)
ifneq ($(ONEDNN_HOME),)
ONEDNN_CFLAGS := -I$(ONEDNN_HOME)/include
ONEDNN_LIBS   := -L$(ONEDNN_HOME)/lib -Wl,-rpath,$(ONEDNN_HOME)/lib
endif
ifndef ONEDNN
ONEDNN := $(shell printf 'int main(void) { return dnnl_version()->major < 2; }\n' | \
            $(CC) -include oneapi/dnnl/dnnl.h $(filter -I%,$(CFLAGS)) $(ONEDNN_CFLAGS) -x c - -o /dev/null \
            $(filter -L% -Wl%,$(LDLIBS)) $(ONEDNN_LIBS) -ldnnl >/dev/null 2>&1 && echo 1 || echo 0)
endif
ONEDNN_OBJ := $(BUILD)/src/backend/cpu/gemm_onednn.o
ifeq ($(ONEDNN),1)
ONEDNN_CFLAGS += -DFL_HAVE_ONEDNN
LDLIBS        += $(ONEDNN_LIBS) -ldnnl
endif
$(ONEDNN_OBJ): CFLAGS += $(ONEDNN_CFLAGS)
$(ONEDNN_OBJ): $(BUILD)/.onednn-flags
$(BUILD)/.onednn-flags: FORCE
	@mkdir -p $(BUILD)
	@echo 'ONEDNN=$(ONEDNN) $(ONEDNN_CFLAGS)' | cmp -s - $@ || echo 'ONEDNN=$(ONEDNN) $(ONEDNN_CFLAGS)' > $@

.PHONY: dev-cuda device-check
# One call on a GPU machine: build for sm_90 only, CUDA tests, benchmarks, summary table.
device-check:
	scripts/device-check

# ---- fuzzing (fuzz/: one libFuzzer harness per parser; docs/FUZZING.md) ---------------------------
# `make fuzz` builds the library with clang, ASan + UBSan and coverage into build-fuzz/ (CPU only),
# links each fuzz/fuzz_*.c with libFuzzer, then fuzz/run.sh assembles the seed corpora and runs each
# harness for FUZZ_SECONDS, one after another, printing executions, coverage and findings per
# target; it fails on any crash, leak, UB, timeout or memory blow-up. FUZZ_TARGETS="a b" narrows it.
FUZZ_CC      ?= clang
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
FUZZ_OPT      = -O1 -g -march=native -fno-omit-frame-pointer -fsanitize=address,undefined \
                -fno-sanitize-recover=all -fsanitize=fuzzer-no-link -Wno-pass-failed -Wno-psabi
FUZZ_SRC     := $(wildcard fuzz/fuzz_*.c)

.PHONY: fuzz fuzz-build fuzz-bins
fuzz: fuzz-build
	FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh $(FUZZ_TARGETS)

fuzz-build:
	$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) OPT="$(FUZZ_OPT)" CUDA=0 ONEDNN=0 fuzz-bins

# (inside the sub-make above, where BUILD is the fuzz build folder)
fuzz-bins: $(FUZZ_SRC:fuzz/%.c=$(BUILD)/%)
$(BUILD)/fuzz_%: fuzz/fuzz_%.c $(BUILD)/libfastlora.a
	$(CC) $(CFLAGS) -fsanitize=fuzzer $< $(BUILD)/libfastlora.a -o $@ $(LDLIBS)
-include $(wildcard $(BUILD)/fuzz_*.d)

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d)
