build-asan/src/backend/cpu/cpu_optim.o: src/backend/cpu/cpu_optim.c \
 src/backend/cpu/cpu_ops.h
src/backend/cpu/cpu_ops.h:
