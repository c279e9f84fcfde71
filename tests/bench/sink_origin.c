/*
 * tests/bench/sink_origin.c: an HTTP/1.1 origin for benchmarks that reads
 * every request's body to its end and keeps none of it (not a test, and not
 * an S3: it checks nothing a store would).  make bench-cores uses it with
 * BENCH_ORIGIN=sink, so that the origin's own cost per request (nginx's dav
 * module writes each 1 MiB body to a file) does not take the CPUs the target
 * is to scale onto.
 *
 *   build/tests/bench/sink_origin PORT [PIDFILE]
 *
 * PIDFILE: where it writes its PID once it listens (a bench that stops it by
 * PID finds its own run's folder in the command line too).
 * Listens on 127.0.0.1:PORT, a thread per connection, keep-alive.  A request
 * with Content-Length has its body read and thrown away in the kernel
 * (recv with MSG_TRUNC: TCP drops the bytes without copying them out); the
 * answer is 200 with an ETag and no body, sent once the whole body is in
 * (after a 100 Continue where the client asked for one).
 * GET /sink-stats answers "REQUESTS LAST_BODY_BYTES TOTAL_BODY_BYTES\n", so
 * a bench can see that a body arrived whole.  A chunked or malformed request
 * is answered 400 and its connection closed.  It exits when its parent does
 * (PR_SET_PDEATHSIG), as well as on SIGTERM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define HEAD_MAX 16384

static atomic_ullong nrequests;
static atomic_ullong last_bytes;
static atomic_ullong total_bytes;

/* send_all - the whole of buf, or -1. */
static int
send_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* discard - drop want bytes from fd, in the kernel; 0 or -1. */
static int
discard(int fd, unsigned long long want)
{
    static char scratch[1]; /* MSG_TRUNC on TCP copies nothing into it */
    while (want > 0) {
        size_t ask = want > (1u << 30) ? (1u << 30) : (size_t)want;
        ssize_t n = recv(fd, scratch, ask, MSG_TRUNC);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        want -= (unsigned long long)n;
    }
    return 0;
}

/* header - the value of header name (any case) in head[0..len), or NULL;
 * *vlen its length.  The head's lines end in CRLF. */
static const char *
header(const char *head, size_t len, const char *name, size_t *vlen)
{
    size_t nl = strlen(name);
    const char *end = head + len;
    const char *p = memchr(head, '\n', len); /* past the request line */
    while (p != NULL && ++p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (eol == NULL) {
            return NULL;
        }
        if ((size_t)(eol - p) > nl && p[nl] == ':' && strncasecmp(p, name, nl) == 0) {
            const char *v = p + nl + 1;
            while (v < eol && (*v == ' ' || *v == '\t')) {
                v++;
            }
            const char *ve = eol;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t')) {
                ve--;
            }
            *vlen = (size_t)(ve - v);
            return v;
        }
        p = eol;
    }
    return NULL;
}

static const char bad[] =
    "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/* serve - one connection's requests, until it closes or errs. */
static void *
serve(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char *buf = malloc(HEAD_MAX);
    size_t have = 0;
    while (buf != NULL) {
        char *eoh = have >= 4 ? memmem(buf, have, "\r\n\r\n", 4) : NULL;
        if (eoh == NULL) {
            if (have == HEAD_MAX) {
                (void)send_all(fd, bad, sizeof(bad) - 1);
                break;
            }
            ssize_t n = recv(fd, buf + have, HEAD_MAX - have, 0);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                break;
            }
            have += (size_t)n;
            continue;
        }
        size_t hlen = (size_t)(eoh - buf) + 4;
        size_t vl = 0;
        unsigned long long clen = 0;
        const char *v = header(buf, hlen, "Content-Length", &vl);
        if (v != NULL) {
            char num[24];
            char *e = NULL;
            if (vl == 0 || vl >= sizeof(num)) {
                (void)send_all(fd, bad, sizeof(bad) - 1);
                break;
            }
            memcpy(num, v, vl);
            num[vl] = '\0';
            errno = 0;
            clen = strtoull(num, &e, 10);
            if (errno != 0 || *e != '\0' || num[0] == '-') {
                (void)send_all(fd, bad, sizeof(bad) - 1);
                break;
            }
        }
        if (header(buf, hlen, "Transfer-Encoding", &vl) != NULL) {
            (void)send_all(fd, bad, sizeof(bad) - 1);
            break;
        }
        const char *cv = header(buf, hlen, "Connection", &vl);
        int closing = cv != NULL && vl == 5 && strncasecmp(cv, "close", 5) == 0;
        int stats = strncmp(buf, "GET /sink-stats ", 16) == 0;
        const char *ev = header(buf, hlen, "Expect", &vl);
        if (ev != NULL && vl == 12 && strncasecmp(ev, "100-continue", 12) == 0 && clen > 0 &&
            have == hlen) {
            static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
            if (send_all(fd, cont, sizeof(cont) - 1) != 0) {
                break;
            }
        }
        /* the body: what came with the head, then the rest in the kernel */
        size_t extra = have - hlen;
        size_t inbuf = extra < clen ? extra : (size_t)clen;
        if (discard(fd, clen - inbuf) != 0) {
            break;
        }
        memmove(buf, buf + hlen + inbuf, extra - inbuf);
        have = extra - inbuf;
        char out[256];
        int olen;
        if (stats) {
            char body[96];
            int blen = snprintf(body, sizeof(body), "%llu %llu %llu\n", atomic_load(&nrequests),
                                atomic_load(&last_bytes), atomic_load(&total_bytes));
            olen = snprintf(out, sizeof(out),
                            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
                            "%d\r\n\r\n%s",
                            blen, body);
        } else {
            unsigned long long k = atomic_fetch_add(&nrequests, 1) + 1;
            atomic_store(&last_bytes, clen);
            atomic_fetch_add(&total_bytes, clen);
            olen = snprintf(out, sizeof(out),
                            "HTTP/1.1 200 OK\r\nETag: \"sink-%llu\"\r\nContent-Length: 0\r\n%s\r\n",
                            k, closing ? "Connection: close\r\n" : "");
        }
        if (send_all(fd, out, (size_t)olen) != 0 || closing) {
            break;
        }
    }
    free(buf);
    (void)close(fd);
    return NULL;
}

int
main(int argc, char **argv)
{
    char *e = NULL;
    long port = argc == 2 || argc == 3 ? strtol(argv[1], &e, 10) : -1;
    if (port <= 0 || *e != '\0' || port > 65535) {
        (void)fprintf(stderr, "usage: sink_origin PORT [PIDFILE]\n");
        return 2;
    }
    (void)prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1) {
        return 1; /* the parent is already gone */
    }
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((unsigned short)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(ls, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(ls, 1024) != 0) {
        perror("sink_origin: listen");
        return 1;
    }
    if (argc == 3) { /* written whole, then renamed into place: never seen half-written */
        char tmp[4096];
        FILE *f = NULL;
        if (snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]) >= (int)sizeof(tmp) ||
            (f = fopen(tmp, "w")) == NULL || fprintf(f, "%ld\n", (long)getpid()) < 0 ||
            fclose(f) != 0 || rename(tmp, argv[2]) != 0) {
            perror(argv[2]);
            return 1;
        }
    }
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0 ||
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) != 0 ||
        pthread_attr_setstacksize(&attr, 256 * 1024) != 0) {
        return 1;
    }
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE) {
                (void)usleep(10000); /* out of descriptors: let connections close */
                continue;
            }
            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }
            perror("sink_origin: accept");
            return 1;
        }
        pthread_t t;
        if (pthread_create(&t, &attr, serve, (void *)(intptr_t)fd) != 0) {
            (void)close(fd);
        }
    }
}
