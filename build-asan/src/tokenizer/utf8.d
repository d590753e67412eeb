build-asan/src/tokenizer/utf8.o: src/tokenizer/utf8.c \
 src/tokenizer/tokenizer_internal.h src/tokenizer/tokenizer.h
src/tokenizer/tokenizer_internal.h:
src/tokenizer/tokenizer.h:
