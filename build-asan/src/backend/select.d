build-asan/src/backend/select.o: src/backend/select.c \
 src/backend/backend.h src/common/error.h
src/backend/backend.h:
src/common/error.h:
