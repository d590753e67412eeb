build-sm90/tests/test_bench.o: tests/test_bench.c src/bench/records.h \
 src/engine/model.h src/backend/backend.h src/engine/activations.h \
 src/lora/lora.h src/model/config.h src/common/dtype.h \
 src/model/weights.h tests/test.h
src/bench/records.h:
src/engine/model.h:
src/backend/backend.h:
src/engine/activations.h:
src/lora/lora.h:
src/model/config.h:
src/common/dtype.h:
src/model/weights.h:
tests/test.h:
