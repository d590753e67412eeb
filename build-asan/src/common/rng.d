build-asan/src/common/rng.o: src/common/rng.c src/common/rng.h
src/common/rng.h:
