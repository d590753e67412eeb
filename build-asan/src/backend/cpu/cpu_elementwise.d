build-asan/src/backend/cpu/cpu_elementwise.o: \
 src/backend/cpu/cpu_elementwise.c src/backend/cpu/cpu_ops.h \
 src/common/rng.h
src/backend/cpu/cpu_ops.h:
src/common/rng.h:
