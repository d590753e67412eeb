build-asan/src/tokenizer/load_hf.o: src/tokenizer/load_hf.c \
 src/tokenizer/tokenizer_internal.h src/tokenizer/tokenizer.h \
 src/common/error.h
src/tokenizer/tokenizer_internal.h:
src/tokenizer/tokenizer.h:
src/common/error.h:
