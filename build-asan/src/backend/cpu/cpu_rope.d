build-asan/src/backend/cpu/cpu_rope.o: src/backend/cpu/cpu_rope.c \
 src/backend/cpu/cpu_ops.h
src/backend/cpu/cpu_ops.h:
