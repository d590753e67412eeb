build-asan/src/plan/plan_report.o: src/plan/plan_report.c \
 src/plan/plan_report.h src/plan/plan.h src/lora/lora.h \
 src/backend/backend.h src/model/config.h src/common/dtype.h \
 src/plan/gpu_catalog.h src/common/error.h src/engine/model.h \
 src/engine/activations.h src/model/weights.h src/io/file_util.h
src/plan/plan_report.h:
src/plan/plan.h:
src/lora/lora.h:
src/backend/backend.h:
src/model/config.h:
src/common/dtype.h:
src/plan/gpu_catalog.h:
src/common/error.h:
src/engine/model.h:
src/engine/activations.h:
src/model/weights.h:
src/io/file_util.h:
