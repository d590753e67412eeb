build-asan/src/backend/cpu/cpu_loss.o: src/backend/cpu/cpu_loss.c \
 src/backend/cpu/cpu_ops.h src/common/error.h
src/backend/cpu/cpu_ops.h:
src/common/error.h:
