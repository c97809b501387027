/* Minimal streaming JSON writer: strings escaped per RFC 8259, non-finite numbers become null. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "iobench.h"

static void put(iob_json *j, const char *s, size_t n)
{
    if (j->len + n + 1 > j->cap) {
        size_t cap = j->cap ? j->cap : 4096;
        while (j->len + n + 1 > cap)
            cap *= 2;
        char *nb = realloc(j->buf, cap);
        if (!nb) {
            fputs("iobench: out of memory writing JSON\n", stderr);
            abort();
        }
        j->buf = nb;
        j->cap = cap;
    }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = '\0';
}

static void puts_(iob_json *j, const char *s) { put(j, s, strlen(s)); }

static void quoted(iob_json *j, const char *s)
{
    puts_(j, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        switch (*p) {
        case '"': puts_(j, "\\\""); break;
        case '\\': puts_(j, "\\\\"); break;
        case '\n': puts_(j, "\\n"); break;
        case '\r': puts_(j, "\\r"); break;
        case '\t': puts_(j, "\\t"); break;
        case '\b': puts_(j, "\\b"); break;
        case '\f': puts_(j, "\\f"); break;
        default:
            if (*p < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", *p);
                puts_(j, esc);
            } else {
                put(j, (const char *)p, 1);
            }
        }
    }
    puts_(j, "\"");
}

/* comma (if a sibling came before) and "key": */
static void member(iob_json *j, const char *key)
{
    if (j->need_comma)
        puts_(j, ",");
    if (key) {
        quoted(j, key);
        puts_(j, ":");
    }
    j->need_comma = 1;
}

void jw_begin_obj(iob_json *j, const char *key) { member(j, key); puts_(j, "{"); j->need_comma = 0; }
void jw_end_obj(iob_json *j) { puts_(j, "}"); j->need_comma = 1; }
void jw_begin_arr(iob_json *j, const char *key) { member(j, key); puts_(j, "["); j->need_comma = 0; }
void jw_end_arr(iob_json *j) { puts_(j, "]"); j->need_comma = 1; }

void jw_str(iob_json *j, const char *key, const char *val)
{
    member(j, key);
    if (val)
        quoted(j, val);
    else
        puts_(j, "null");
}

void jw_int(iob_json *j, const char *key, int64_t val)
{
    char b[32];
    member(j, key);
    snprintf(b, sizeof b, "%lld", (long long)val);
    puts_(j, b);
}

void jw_num(iob_json *j, const char *key, double val)
{
    char b[40];
    member(j, key);
    if (!isfinite(val)) {
        puts_(j, "null");
        return;
    }
    snprintf(b, sizeof b, "%.17g", val);
    puts_(j, b);
}

void jw_bool(iob_json *j, const char *key, int val)
{
    member(j, key);
    puts_(j, val ? "true" : "false");
}

void jw_kvlist(iob_json *j, const char *key, const iob_kvlist *l)
{
    jw_begin_obj(j, key);
    for (int i = 0; l && i < l->n; i++)
        jw_str(j, l->kv[i].key, l->kv[i].value);
    jw_end_obj(j);
}
