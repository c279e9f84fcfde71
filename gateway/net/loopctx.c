#include "gateway/net/loopctx.h"

_Thread_local struct gw_loopctx *gw_loopctx_here = NULL;
