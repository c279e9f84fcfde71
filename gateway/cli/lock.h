/*
 * gateway/cli/lock.h: `fencegate lock`, the worker side of the election API
 * (DESIGN.md "The election", "Running it").  Implemented in
 * gateway/cli/lock.c (it speaks JSON through jansson) and
 * gateway/cli/lock_run.c (signals, run's scheduler and child).
 *
 *   fencegate lock acquire LOCK [--holder H] [--lease-ms N] [--wait-ms N]
 *   fencegate lock renew   LOCK --token N --lease-id ID
 *   fencegate lock release LOCK --token N --lease-id ID
 *   fencegate lock show    [LOCK]
 *   fencegate lock watch   LOCK
 *   fencegate lock run     LOCK [--holder H] [--lease-ms N] [--wait-ms N]
 *                          [--grace-ms N] -- CMD [ARGS...]
 * common options:
 *   --gateway URL        default $FENCEGATE_URL, else http://127.0.0.1:9000
 *   --region R           default $AWS_REGION, $AWS_DEFAULT_REGION, us-east-1
 *   --access-key AK      default $AWS_ACCESS_KEY_ID
 *   --secret-key-env V   the variable holding the secret (default AWS_SECRET_ACCESS_KEY)
 * Requests are signed with SigV4 (service "s3"; $AWS_SESSION_TOKEN is sent
 * when set) when credentials are found, and sent unsigned otherwise.
 *
 * Output: acquire prints the grant (one JSON line, with token and lease_id)
 * on stdout; renew, release and show print the gateway's JSON answer without
 * any lease_id; watch prints one JSON line per change (new epoch, holder,
 * release, lease running out) until SIGINT/SIGTERM.  Nothing is printed on
 * stdout for a refusal, so `$(fencegate lock acquire ...)` never yields
 * another holder's token.  Errors go to stderr.  The secret key is never
 * printed, lease_id only by acquire.
 *
 * run: acquires (waiting, in slices, forever unless --wait-ms), then runs CMD
 * in its own process group with FENCING_LOCK, FENCING_TOKEN and
 * FENCING_GATEWAY in its environment, renews at a third of the lease, and as
 * soon as the lease cannot be kept (409 superseded, 403, or no successful
 * renew before the lease would run out by the local monotonic clock) sends the
 * group SIGTERM, then SIGKILL after --grace-ms (default 5000).  SIGINT and
 * SIGTERM sent to run are forwarded to the group.  The lock is released when
 * CMD exits (unless it was lost).  If run itself dies, the child gets SIGTERM
 * (PR_SET_PDEATHSIG).
 *
 * Exit status:
 *   0  done (acquire: granted; renew/release: done; watch: stopped by a signal)
 *   1  error (gateway unreachable, unexpected answer; reason on stderr)
 *   2  usage error
 *   3  acquire/run: the lock is held by another (after --wait-ms);
 *      renew/release: the lease is not ours any more (409, 403, 404)
 *   4  run: the lease was lost while CMD ran (CMD was stopped)
 *   otherwise (run) CMD's own exit status, or 128+N if it died of signal N
 *
 * Main thread, no event loop; blocking I/O (gateway/cli/apiclient.h).
 * Installs handlers for SIGINT, SIGTERM (and, for run, SIGCHLD).
 */
#ifndef GW_CMD_LOCK_H
#define GW_CMD_LOCK_H

#define GW_LOCK_EXIT_OK    0
#define GW_LOCK_EXIT_ERROR 1
#define GW_LOCK_EXIT_USAGE 2
#define GW_LOCK_EXIT_HELD  3
#define GW_LOCK_EXIT_LOST  4

/*
 * gw_cmd_lock - run `fencegate lock ...`.
 * [in] argc, argv  argv[0] is "lock", argv[1] the sub-command; borrowed
 * Returns the process exit status (above).
 */
int gw_cmd_lock(int argc, char **argv);

#endif
