build-asan/src/tokenizer/chat.o: src/tokenizer/chat.c \
 src/tokenizer/tokenizer_internal.h src/tokenizer/tokenizer.h \
 src/common/error.h
src/tokenizer/tokenizer_internal.h:
src/tokenizer/tokenizer.h:
src/common/error.h:
