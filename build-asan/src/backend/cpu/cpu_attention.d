build-asan/src/backend/cpu/cpu_attention.o: \
 src/backend/cpu/cpu_attention.c src/backend/cpu/cpu_ops.h \
 src/common/error.h
src/backend/cpu/cpu_ops.h:
src/common/error.h:
