build-asan/src/bench/records.o: src/bench/records.c src/bench/records.h \
 src/common/error.h
src/bench/records.h:
src/common/error.h:
