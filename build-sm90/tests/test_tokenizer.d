build-sm90/tests/test_tokenizer.o: tests/test_tokenizer.c tests/test.h \
 src/tokenizer/tokenizer.h src/common/error.h
tests/test.h:
src/tokenizer/tokenizer.h:
src/common/error.h:
