build-sm90/tests/test_tokenizer_chat.o: tests/test_tokenizer_chat.c \
 tests/test.h src/tokenizer/tokenizer.h src/common/error.h
tests/test.h:
src/tokenizer/tokenizer.h:
src/common/error.h:
