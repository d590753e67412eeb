build/src/cli/cmd_bench.o: src/cli/cmd_bench.c src/cli/args.h \
 src/cli/commands.h src/common/error.h src/common/rng.h \
 src/engine/model.h src/backend/backend.h src/engine/activations.h \
 src/lora/lora.h src/model/config.h src/common/dtype.h \
 src/model/weights.h
src/cli/args.h:
src/cli/commands.h:
src/common/error.h:
src/common/rng.h:
src/engine/model.h:
src/backend/backend.h:
src/engine/activations.h:
src/lora/lora.h:
src/model/config.h:
src/common/dtype.h:
src/model/weights.h:
