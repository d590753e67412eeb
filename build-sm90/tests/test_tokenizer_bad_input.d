build-sm90/tests/test_tokenizer_bad_input.o: \
 tests/test_tokenizer_bad_input.c tests/test.h src/tokenizer/tokenizer.h \
 src/common/error.h
tests/test.h:
src/tokenizer/tokenizer.h:
src/common/error.h:
