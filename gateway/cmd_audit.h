/*
 * gateway/cmd_audit.h: `fencegate audit`, the offline audit-log reader.
 *
 *   fencegate audit --data-dir DIR [--lock L] [--since T] [--until T]
 *                   [--limit N] [--after CURSOR] [--json]
 *
 * Opens the store read-only (MDB_RDONLY), which is safe while a gateway is
 * running on the same files, and prints the matching rejected writes oldest
 * first: a table by default, or one JSON document
 * {"records":[...],"next":"<cursor>"|null} with --json (gateway/json_audit.h).
 * T is RFC 3339 UTC (2026-11-21T10:00:00Z) or Unix milliseconds.  When more
 * records follow, the table ends with a line naming the --after cursor.
 * Main thread, no event loop.
 */
#ifndef GW_CMD_AUDIT_H
#define GW_CMD_AUDIT_H

/*
 * gw_cmd_audit - run the sub-command.
 * [in] argc, argv  argv[0] is "audit"; the strings are borrowed
 * Returns the process exit status: 0 (listed, maybe nothing), 1 (the store
 * could not be read; the reason is on stderr), 2 (usage error).
 */
int gw_cmd_audit(int argc, char **argv);

#endif
