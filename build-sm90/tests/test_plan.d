build-sm90/tests/test_plan.o: tests/test_plan.c src/common/error.h \
 src/engine/activations.h src/backend/backend.h src/lora/lora.h \
 src/model/config.h src/common/dtype.h src/engine/model.h \
 src/model/weights.h src/plan/plan.h src/plan/gpu_catalog.h \
 src/plan/plan_report.h tests/test.h
src/common/error.h:
src/engine/activations.h:
src/backend/backend.h:
src/lora/lora.h:
src/model/config.h:
src/common/dtype.h:
src/engine/model.h:
src/model/weights.h:
src/plan/plan.h:
src/plan/gpu_catalog.h:
src/plan/plan_report.h:
tests/test.h:
