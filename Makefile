# fastlora build. `make` builds build/fastlora (CPU backend); `make test` builds and runs the test
# suite (plus the AddressSanitizer run of the bad-input tests); `make bench` runs the README's
# benchmark. Every source under src/ is picked up by its folder; no list to keep in sync.
CC      ?= gcc
CFLAGS  ?= -O3 -march=native
# -fno-math-errno lets `omp simd` loops call the vector expf; nothing here reads errno after libm.
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -fopenmp -fno-math-errno -Isrc -MMD -MP
# OpenBLAS's OpenMP build, so BLAS and our kernels share one thread pool (the pthread build's
# threads spin against OpenMP's and cost ~40% of a step on 2 cores).
BLAS_DIR ?= /usr/lib/x86_64-linux-gnu/openblas-openmp
BLAS_LIBS = -L$(BLAS_DIR) -Wl,-rpath,$(BLAS_DIR) -lopenblas
LDLIBS  += -ljansson -lpcre2-8 $(BLAS_LIBS) -lm -fopenmp
BUILD   ?= build

LIB_SRC  := $(filter-out src/cli/main.c,$(wildcard src/*/*.c src/*/*/*.c))
CLI_SRC  := src/cli/main.c
TEST_SRC := $(wildcard tests/*.c)

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)

.PHONY: all test bench clean setup asan-test
all: $(BUILD)/fastlora $(BUILD)/fastlora_tests

setup:
	@scripts/setup

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libfastlora.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/fastlora: $(CLI_OBJ) $(BUILD)/libfastlora.a Makefile
	$(CC) $(CFLAGS) $(filter-out Makefile,$^) -o $@ $(LDLIBS)

$(BUILD)/fastlora_tests: $(TEST_OBJ) $(BUILD)/libfastlora.a Makefile
	$(CC) $(CFLAGS) $(filter-out Makefile,$^) -o $@ $(LDLIBS)

test: all
	FASTLORA_BIN=$(BUILD)/fastlora $(BUILD)/fastlora_tests
	$(MAKE) --no-print-directory asan-test

# The bad-input tests again under AddressSanitizer + UBSan: malformed files must never crash.
asan-test:
	$(MAKE) --no-print-directory BUILD=build-asan CFLAGS="-O1 -g -march=native -fsanitize=address,undefined -fno-omit-frame-pointer" \
	    LDLIBS="-ljansson -lpcre2-8 $(BLAS_LIBS) -lm -fopenmp -fsanitize=address,undefined" build-asan/fastlora build-asan/fastlora_tests
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 FASTLORA_BIN=build-asan/fastlora build-asan/fastlora_tests bad_input

bench: $(BUILD)/fastlora
	$(BUILD)/fastlora bench

clean:
	rm -rf build build-asan

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d)
