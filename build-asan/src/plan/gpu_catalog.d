build-asan/src/plan/gpu_catalog.o: src/plan/gpu_catalog.c \
 src/plan/gpu_catalog.h src/common/error.h src/plan/csv.h
src/plan/gpu_catalog.h:
src/common/error.h:
src/plan/csv.h:
