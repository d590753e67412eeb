build/src/backend/cpu/cpu_norm.o: src/backend/cpu/cpu_norm.c \
 src/backend/cpu/cpu_ops.h src/common/dtype.h
src/backend/cpu/cpu_ops.h:
src/common/dtype.h:
