/* cmds.h - the subcommands of the `probs` tool, one file each (cli/cmd_*.c).
 * Each takes the arguments after the subcommand name (argv[0] is the
 * subcommand) and returns the process exit status. */
#ifndef PB_CLI_CMDS_H
#define PB_CLI_CMDS_H

int pb_cmd_perft(int argc, char **argv);
int pb_cmd_match(int argc, char **argv);
int pb_cmd_search(int argc, char **argv);
int pb_cmd_train(int argc, char **argv);
int pb_cmd_elo_calibrate(int argc, char **argv);
int pb_cmd_solve(int argc, char **argv);
int pb_cmd_accuracy(int argc, char **argv);
int pb_cmd_testset(int argc, char **argv);
int pb_cmd_keys(int argc, char **argv);
int pb_cmd_play(int argc, char **argv);
int pb_cmd_gtp(int argc, char **argv);
int pb_cmd_analyze(int argc, char **argv);
int pb_cmd_analysis(int argc, char **argv);
int pb_cmd_export(int argc, char **argv);
int pb_cmd_serve(int argc, char **argv);

#endif
