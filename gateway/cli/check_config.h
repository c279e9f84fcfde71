/*
 * gateway/cli/check_config.h: `fencegate check-config -c FILE` (STYLE R9:
 * validate a configuration and print "configuration OK"), and the `-c FILE`
 * argument that it and `serve` take.
 */
#ifndef GW_CHECK_CONFIG_H
#define GW_CHECK_CONFIG_H

/*
 * gw_cli_config_path - the FILE of "-c FILE" or "--config FILE" in argv[1..argc).
 * Returns it (borrowed from argv), or NULL if absent.
 */
const char *gw_cli_config_path(int argc, char **argv);

/* gw_cmd_check_config - validate a config file; argv[0] is "check-config".  Returns the exit
 * status. */
int gw_cmd_check_config(int argc, char **argv);

#endif
