build-asan/src/io/file_util.o: src/io/file_util.c src/io/file_util.h \
 src/common/error.h
src/io/file_util.h:
src/common/error.h:
