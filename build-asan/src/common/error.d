build-asan/src/common/error.o: src/common/error.c src/common/error.h
src/common/error.h:
