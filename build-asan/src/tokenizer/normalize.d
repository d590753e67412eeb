build-asan/src/tokenizer/normalize.o: src/tokenizer/normalize.c \
 src/tokenizer/tokenizer_internal.h src/tokenizer/tokenizer.h \
 src/common/error.h src/tokenizer/unicode_nfc.h
src/tokenizer/tokenizer_internal.h:
src/tokenizer/tokenizer.h:
src/common/error.h:
src/tokenizer/unicode_nfc.h:
