build-asan/src/bench/board.o: src/bench/board.c src/bench/board.h \
 src/bench/records.h src/bench/reference.h src/common/error.h
src/bench/board.h:
src/bench/records.h:
src/bench/reference.h:
src/common/error.h:
