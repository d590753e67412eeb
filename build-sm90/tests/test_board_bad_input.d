build-sm90/tests/test_board_bad_input.o: tests/test_board_bad_input.c \
 src/bench/board.h src/bench/records.h src/bench/reference.h \
 src/common/error.h tests/test.h
src/bench/board.h:
src/bench/records.h:
src/bench/reference.h:
src/common/error.h:
tests/test.h:
