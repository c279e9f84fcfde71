#include "common/err.h"

const char *
err_str(int err)
{
    switch (err) {
    case ERR_OK:
        return "success";
    case ERR_NOMEM:
        return "out of memory";
    case ERR_INVAL:
        return "invalid argument";
    case ERR_NOTFOUND:
        return "not found";
    case ERR_TOOBIG:
        return "too big";
    case ERR_IO:
        return "I/O error";
    case ERR_UPSTREAM:
        return "upstream error";
    case ERR_TIMEOUT:
        return "timed out";
    case ERR_FENCED:
        return "stale fencing token";
    case ERR_EXISTS:
        return "already exists";
    case ERR_CONFLICT:
        return "conflict";
    case ERR_AUTH:
        return "authentication failed";
    case ERR_DENIED:
        return "access denied";
    case ERR_VERSION:
        return "unsupported format version";
    case ERR_CLOSED:
        return "closed";
    case ERR_AGAIN:
        return "try again";
    case ERR_UNSUPPORTED:
        return "not supported";
    case ERR_EXPIRED:
        return "lease expired";
    default:
        return "unknown error";
    }
}
