/* The `sive` command-line program: toy tables, training, probing,
 * trajectories and the demo. */
#include "cli.h"

#include <sive/sive.h>
#include <stdio.h>
#include <string.h>

static const char *usage =
    "usage: sive <command> [options]\n"
    "commands:\n"
    "  demo        the toy Table 1, then a short MNIST trajectory with its plot\n"
    "  toy         the paper's Table 1 on the analytic toy models\n"
    "  train       train the reference MLP, one checkpoint per epoch\n"
    "  probe       lambda-hat and diagnostics for checkpoints\n"
    "  merge       combine result files of chain ranges (probe --save-result)\n"
    "  trajectory  train, probe every checkpoint, compare the estimators, plot\n"
    "  calibrate   sweep c_h, base_lr or N and recommend an operating point\n"
    "  options     the library's probe options: names, defaults, bounds\n"
    "  version     print the library version and the BLIS kernels it runs\n"
    "Run 'sive <command> --help' (or 'sive help <command>') for the options of a command.\n";

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {{"toy", cmd_toy},     {"train", cmd_train},
                {"probe", cmd_probe}, {"trajectory", cmd_trajectory},
                {"demo", cmd_demo},   {"options", cmd_options},
                {"merge", cmd_merge},
                {"calibrate", cmd_calibrate}};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(cmd, cmds[i].name)) {
            cli_set_cmd(cmd);
            return cmds[i].fn(argc - 1, argv + 1);
        }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("sive %s (libsive %s)\nBLIS kernels: %s\n", SIVE_VERSION_STRING,
               sive_version_string(), sive_mlp_blis_kernels());
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        /* `sive help probe` is `sive probe --help` */
        for (size_t i = 0; argc > 2 && i < sizeof cmds / sizeof cmds[0]; i++)
            if (!strcmp(argv[2], cmds[i].name)) {
                char help[] = "--help", *args[] = {argv[2], help, NULL};
                cli_set_cmd(argv[2]);
                return cmds[i].fn(2, args);
            }
        fputs(usage, stdout);
        return 0;
    }
    fprintf(stderr, "sive: unknown command '%s'\n%s", cmd, usage);
    return 2;
}
