build-asan/src/backend/cpu/cpu_backend.o: src/backend/cpu/cpu_backend.c \
 src/backend/backend.h src/backend/cpu/cpu_ops.h
src/backend/backend.h:
src/backend/cpu/cpu_ops.h:
