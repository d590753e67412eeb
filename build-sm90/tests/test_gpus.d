build-sm90/tests/test_gpus.o: tests/test_gpus.c src/common/error.h \
 src/plan/csv.h src/plan/gpu_catalog.h tests/test.h
src/common/error.h:
src/plan/csv.h:
src/plan/gpu_catalog.h:
tests/test.h:
