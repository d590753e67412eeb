build/src/backend/cpu/cpu_memory.o: src/backend/cpu/cpu_memory.c \
 src/backend/cpu/cpu_ops.h src/common/dtype.h src/common/error.h
src/backend/cpu/cpu_ops.h:
src/common/dtype.h:
src/common/error.h:
