build-asan/src/common/dtype.o: src/common/dtype.c src/common/dtype.h
src/common/dtype.h:
