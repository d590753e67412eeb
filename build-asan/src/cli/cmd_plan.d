build-asan/src/cli/cmd_plan.o: src/cli/cmd_plan.c src/cli/args.h \
 src/cli/commands.h src/common/error.h src/plan/csv.h src/plan/plan.h \
 src/lora/lora.h src/backend/backend.h src/model/config.h \
 src/common/dtype.h src/plan/gpu_catalog.h src/plan/plan_report.h \
 src/tokenizer/tokenizer.h
src/cli/args.h:
src/cli/commands.h:
src/common/error.h:
src/plan/csv.h:
src/plan/plan.h:
src/lora/lora.h:
src/backend/backend.h:
src/model/config.h:
src/common/dtype.h:
src/plan/gpu_catalog.h:
src/plan/plan_report.h:
src/tokenizer/tokenizer.h:
