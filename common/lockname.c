/* common/lockname.c: the lock-name rule (see lockname.h). */
#include "common/lockname.h"

#include <string.h>

bool
lock_name_valid(const char *lock)
{
    if (lock == NULL) {
        return false;
    }
    size_t n = strnlen(lock, LOCK_NAME_MAX + 1);
    if (n == 0 || n > LOCK_NAME_MAX) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char c = lock[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        if (!ok) {
            return false;
        }
    }
    return strcmp(lock, ".") != 0 && strcmp(lock, "..") != 0;
}
