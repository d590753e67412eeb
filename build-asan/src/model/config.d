build-asan/src/model/config.o: src/model/config.c src/model/config.h \
 src/common/dtype.h src/common/error.h
src/model/config.h:
src/common/dtype.h:
src/common/error.h:
