/*
 * gateway/cli/audit.h: `fencegate audit`, the offline audit-log reader.
 *
 *   fencegate audit --data-dir DIR [--data-dir DIR ...] [--lock L] [--since T]
 *                   [--until T] [--limit N] [--after CURSOR] [--json]
 *
 * Opens the store read-only (MDB_RDONLY), which is safe while a gateway is
 * running on the same files, and prints the matching rejected writes oldest
 * first: a table by default, or one JSON document
 * {"records":[...],"next":"<cursor>"|null} with --json (gateway/api/json_audit.h).
 * T is RFC 3339 UTC (2026-11-21T10:00:00Z) or Unix milliseconds.  When more
 * records follow, the table ends with a line naming the --after cursor.
 *
 * With several --data-dir (gateways side by side, one store each) it opens
 * every store read-only and prints one listing merged in time order
 * (gateway/cli/audit_merge.h: ties by --data-dir order, then seq); --limit
 * bounds the merged listing and --after takes the merged cursor it printed.
 * Each record names its data dir, as given: a SOURCE column after TIME, or
 * "source" first in each JSON record.  (The store does not record a gateway
 * id, so the path is the name.)  A data dir that cannot be opened fails the
 * run naming it; one given twice is a usage error.  With one --data-dir the
 * output is as it always was, without the source.
 * Main thread, no event loop.
 */
#ifndef GW_CMD_AUDIT_H
#define GW_CMD_AUDIT_H

/*
 * gw_cmd_audit - run the sub-command.
 * [in] argc, argv  argv[0] is "audit"; the strings are borrowed
 * Returns the process exit status: 0 (listed, maybe nothing), 1 (a store
 * could not be opened or read; the reason, naming it, is on stderr), 2 (usage
 * error).
 */
int gw_cmd_audit(int argc, char **argv);

#endif
