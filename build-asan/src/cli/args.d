build-asan/src/cli/args.o: src/cli/args.c src/cli/args.h
src/cli/args.h:
