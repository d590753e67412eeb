build-asan/src/cli/cmd_tokenize.o: src/cli/cmd_tokenize.c \
 src/cli/commands.h src/common/error.h src/tokenizer/tokenizer.h
src/cli/commands.h:
src/common/error.h:
src/tokenizer/tokenizer.h:
