/*
 * gateway/cli/serve.h: `fencegate serve -c FILE`, the daemon.
 *
 * Builds the event loop, the upstream client, the proxy and the server from
 * the configuration, installs signal handlers (SIGTERM/SIGINT: drain and
 * exit, a second one exits at once; SIGHUP: reload the configuration between
 * requests) and runs until told to stop.
 */
#ifndef GW_SERVE_H
#define GW_SERVE_H

/* gw_cmd_serve - run the daemon; argv[0] is "serve".  Returns the process exit status. */
int gw_cmd_serve(int argc, char **argv);

#endif
