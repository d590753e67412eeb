build-sm90/tests/test_bad_input_model.o: tests/test_bad_input_model.c \
 src/common/error.h src/io/safetensors.h src/common/dtype.h \
 src/model/config.h tests/test.h
src/common/error.h:
src/io/safetensors.h:
src/common/dtype.h:
src/model/config.h:
tests/test.h:
