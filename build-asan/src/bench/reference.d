build-asan/src/bench/reference.o: src/bench/reference.c \
 src/bench/reference.h src/common/error.h src/io/file_util.h
src/bench/reference.h:
src/common/error.h:
src/io/file_util.h:
