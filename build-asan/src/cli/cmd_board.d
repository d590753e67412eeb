build-asan/src/cli/cmd_board.o: src/cli/cmd_board.c src/bench/board.h \
 src/bench/records.h src/bench/reference.h src/cli/args.h \
 src/cli/commands.h src/common/error.h src/io/file_util.h
src/bench/board.h:
src/bench/records.h:
src/bench/reference.h:
src/cli/args.h:
src/cli/commands.h:
src/common/error.h:
src/io/file_util.h:
