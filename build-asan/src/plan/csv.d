build-asan/src/plan/csv.o: src/plan/csv.c src/plan/csv.h \
 src/common/error.h
src/plan/csv.h:
src/common/error.h:
