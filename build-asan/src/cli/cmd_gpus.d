build-asan/src/cli/cmd_gpus.o: src/cli/cmd_gpus.c src/cli/args.h \
 src/cli/commands.h src/common/error.h src/plan/gpu_catalog.h
src/cli/args.h:
src/cli/commands.h:
src/common/error.h:
src/plan/gpu_catalog.h:
