build-sm90/tests/test_hf_fixtures.o: tests/test_hf_fixtures.c \
 src/backend/backend.h src/common/error.h src/engine/model.h \
 src/engine/activations.h src/lora/lora.h src/model/config.h \
 src/common/dtype.h src/model/weights.h src/io/safetensors.h \
 src/lora/adapter_io.h tests/test.h
src/backend/backend.h:
src/common/error.h:
src/engine/model.h:
src/engine/activations.h:
src/lora/lora.h:
src/model/config.h:
src/common/dtype.h:
src/model/weights.h:
src/io/safetensors.h:
src/lora/adapter_io.h:
tests/test.h:
