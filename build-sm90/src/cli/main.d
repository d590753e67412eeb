build-sm90/src/cli/main.o: src/cli/main.c src/cli/commands.h
src/cli/commands.h:
