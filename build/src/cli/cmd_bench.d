build/src/cli/cmd_bench.o: src/cli/cmd_bench.c src/bench/records.h \
 src/bench/reference.h src/cli/args.h src/cli/commands.h \
 src/common/error.h src/common/rng.h src/engine/model.h \
 src/backend/backend.h src/engine/activations.h src/lora/lora.h \
 src/model/config.h src/common/dtype.h src/model/weights.h \
 src/plan/gpu_catalog.h src/backend/cuda/cuda_info.h
src/bench/records.h:
src/bench/reference.h:
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
src/plan/gpu_catalog.h:
src/backend/cuda/cuda_info.h:
