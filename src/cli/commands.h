/* commands.h — the subcommands of the `fastlora` program, one cmd_*.c file each.
 * Each takes the arguments after its own name and returns the process exit code
 * (0 ok, 2 bad input, 1 internal failure). */
#ifndef FL_COMMANDS_H
#define FL_COMMANDS_H

int cmd_bench(int argc, char **argv);
int cmd_gpus(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_board(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_convert_llama2c(int argc, char **argv);
int cmd_export(int argc, char **argv);

#endif
