build-sm90/tests/test_board.o: tests/test_board.c src/bench/board.h \
 src/bench/records.h src/bench/reference.h tests/test.h
src/bench/board.h:
src/bench/records.h:
src/bench/reference.h:
tests/test.h:
