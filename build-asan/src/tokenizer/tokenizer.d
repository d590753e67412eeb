build-asan/src/tokenizer/tokenizer.o: src/tokenizer/tokenizer.c \
 src/tokenizer/tokenizer_internal.h src/tokenizer/tokenizer.h \
 src/common/error.h
src/tokenizer/tokenizer_internal.h:
src/tokenizer/tokenizer.h:
src/common/error.h:
