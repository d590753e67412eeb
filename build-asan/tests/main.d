build-asan/tests/main.o: tests/main.c tests/test.h
tests/test.h:
