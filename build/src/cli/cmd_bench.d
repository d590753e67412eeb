build/src/cli/cmd_bench.o: src/cli/cmd_bench.c
