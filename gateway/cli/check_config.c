#include "gateway/cli/check_config.h"

#include <stdio.h>
#include <string.h>

#include "gateway/base/config.h"

const char *
gw_cli_config_path(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) && i + 1 < argc) {
            return argv[i + 1];
        }
    }
    return NULL;
}

/* gw_config_warn_fn: "FILE: warning: ..." on stderr; the file is still OK */
static void
print_warning(void *arg, const char *text)
{
    (void)fprintf(stderr, "%s: warning: %s\n", (const char *)arg, text);
}

int
gw_cmd_check_config(int argc, char **argv)
{
    char errbuf[512];
    struct gw_config *cfg = NULL;
    const char *path = gw_cli_config_path(argc, argv);
    if (path == NULL) {
        (void)fprintf(stderr, "usage: fencegate check-config -c FILE\n");
        return 2;
    }
    if (gw_config_load(path, &cfg, errbuf, sizeof(errbuf)) != 0) {
        (void)fprintf(stderr, "%s: %s\n", path, errbuf);
        return 1;
    }
    gw_config_warnings(cfg, print_warning, (void *)path);
    gw_config_free(cfg);
    (void)printf("configuration OK\n");
    return 0;
}
