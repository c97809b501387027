/* SIONlib reports errors only on stderr: each call of the sionlib backend runs with its stderr captured
 * (and re-emitted, stderr_capture.h), and on error the call and SIONlib's own line become iobench's
 * message. Header-only, for backend_sionlib.c. */
#ifndef IOB_SIONLIB_MSG_H
#define IOB_SIONLIB_MSG_H
#include <errno.h>
#include <string.h>
#include "iobench.h"
#include "stderr_capture.h"

/* The captured text's first line (SIONlib prints the innermost error first) without the
 * "SION_ERROR_RETURN on rank -1, rc=-1: " prefix. */
static void cap_end(char *msg, size_t n)
{
    char buf[8192];
    cap_take(buf, sizeof buf);
    char *line = buf + strspn(buf, "\n");
    line[strcspn(line, "\n")] = '\0';
    char *colon = strncmp(line, "SION_", 5) == 0 ? strstr(line, ": ") : NULL;
    snprintf(msg, n, "%s", colon ? colon + 2 : line);
    for (size_t len = strlen(msg); len > 0 && (msg[len - 1] == ' ' || msg[len - 1] == '.');)
        msg[--len] = '\0';
}

static int sionfail(iob_ctx *c, const char *call, const char *captured, int e)
{
    char sys[128] = "";
    if (e == ENOSPC || e == EDQUOT || e == EIO || e == EFBIG) /* SIONlib drops errno from its text */
        snprintf(sys, sizeof sys, " (%s)", strerror(e));
    return iob_fail(c, "%s: %s%s", call, captured[0] ? captured : "SIONlib call failed (no message)", sys);
}
#endif
