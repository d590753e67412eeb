build-asan/src/tokenizer/decode.o: src/tokenizer/decode.c \
 src/tokenizer/tokenizer_internal.h src/tokenizer/tokenizer.h \
 src/common/error.h
src/tokenizer/tokenizer_internal.h:
src/tokenizer/tokenizer.h:
src/common/error.h:
