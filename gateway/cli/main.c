/*
 * gateway/cli/main.c: the fencegate command.  Dispatches sub-commands.
 */
#include <stdio.h>
#include <string.h>

#include "gateway/cli/cli.h"

#ifndef FENCEGATE_VERSION
#define FENCEGATE_VERSION "0.1.0-dev"
#endif

static void
usage(FILE *f)
{
    (void)fprintf(f, "usage: fencegate COMMAND [ARGS]\n"
                     "\n"
                     "commands:\n"
                     "  serve -c FILE          run the gateway\n"
                     "  check-config -c FILE   validate a configuration file\n"
                     "  audit --data-dir DIR [--lock L] [--since T] [--limit N] [--json]\n"
                     "                         list rejected writes (offline, read-only)\n"
                     "  lock acquire|renew|release|show|watch|run LOCK ...\n"
                     "                         hold a lock through a gateway (lock --help)\n"
                     "  version                print the version\n");
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "serve") == 0) {
        return gw_cmd_serve(argc - 1, argv + 1);
    }
    if (strcmp(cmd, "check-config") == 0 || strcmp(cmd, "-n") == 0) {
        return gw_cmd_check_config(argc - 1, argv + 1);
    }
    if (strcmp(cmd, "audit") == 0) {
        return gw_cmd_audit(argc - 1, argv + 1);
    }
    if (strcmp(cmd, "lock") == 0) {
        return gw_cmd_lock(argc - 1, argv + 1);
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        (void)printf("fencegate %s\n", FENCEGATE_VERSION);
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    (void)fprintf(stderr, "fencegate: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
