build/src/train/data.o: src/train/data.c src/train/data.h \
 src/tokenizer/tokenizer.h src/common/error.h src/io/file_util.h
src/train/data.h:
src/tokenizer/tokenizer.h:
src/common/error.h:
src/io/file_util.h:
