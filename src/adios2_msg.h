/* ADIOS2 reports errors only on stderr: each call of the adios2 backend runs with its stderr captured
 * (and re-emitted, stderr_capture.h), and on error the call and ADIOS2's own words, as one line, become
 * iobench's message. Header-only, for backend_adios2.c. */
#ifndef IOB_ADIOS2_MSG_H
#define IOB_ADIOS2_MSG_H
#include <string.h>
#include <adios2_c.h>
#include "iobench.h"
#include "stderr_capture.h"

/* "[Sun Nov 22 03:43:07 2026]": ADIOS2's timestamp, not part of the message. */
static int is_stamp(const char *p)
{
    const char *e = strchr(p, ']');
    return p[0] == '[' && e && e - p == 25 && p[14] == ':' && p[17] == ':';
}

/* The captured text as one line without colour codes and timestamps (ADIOS2 nests the engine's
 * exception inside the binding's error). */
static void cap_end(char *msg, size_t n)
{
    char buf[8192];
    cap_take(buf, sizeof buf);
    char *o = buf;
    for (char *i = buf; *i; i++) {
        if (*i == '\033' && i[1] == '[') { /* ESC [ ... m */
            while (i[1] && *i != 'm')
                i++;
            continue;
        }
        if (is_stamp(i)) {
            i = strchr(i, ']') + (strchr(i, ']')[1] == ' ');
            continue;
        }
        *o++ = (*i == '\n' || *i == '\r') ? ' ' : *i;
    }
    while (o > buf && o[-1] == ' ')
        o--;
    *o = '\0';
    snprintf(msg, n, "%.*s", (int)n - 1, buf + strspn(buf, " "));
}

static int a2fail(iob_ctx *c, const char *call, const char *captured)
{
    return iob_fail(c, "%s: %s", call, captured[0] ? captured : "ADIOS2 call failed (no message)");
}

/* Run `stmt` (an ADIOS2 call) with its stderr captured; when `failed` then holds, record the call and
 * ADIOS2's words and take `fail`. */
#define A2CALL(c, call, stmt, failed)                                                             \
    do {                                                                                          \
        char msg_[IOB_ERRLEN];                                                                    \
        cap_begin();                                                                              \
        stmt;                                                                                     \
        cap_end(msg_, sizeof msg_);                                                               \
        if (failed) {                                                                             \
            a2fail(c, call, msg_);                                                                \
            goto fail;                                                                            \
        }                                                                                         \
    } while (0)
/* A call returning adios2_error; a call returning a handle (NULL on error). */
#define A2(c, call, expr) A2CALL(c, call, adios2_error e_ = (expr), e_ != adios2_error_none)
#define A2P(c, call, lhs, expr) A2CALL(c, call, lhs = (expr), !(lhs))
#endif
