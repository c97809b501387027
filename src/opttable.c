/* --param KEY=VALUE from the option tables (iob_option, iobench.h): the driver, each backend and each
 * pattern declare their keys once, with type, default, range and help; this file parses and validates
 * the values given and prints the tables for --help (IOR's option_help + option.c are the model). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "driver.h"

const iob_option *iob_option_find(const iob_option *t, const char *key)
{
    for (; t && t->key; t++)
        if (strcmp(t->key, key) == 0)
            return t;
    return NULL;
}

/* "a|b|c" holds s */
static int in_bars(const char *list, const char *s)
{
    size_t n = strlen(s);
    for (const char *p = list; p; p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL)
        if (strncmp(p, s, n) == 0 && (p[n] == '|' || p[n] == '\0'))
            return 1;
    return 0;
}

/* The run's tables: the driver's, its backend's, its pattern's (NULL where unknown). */
static void tables_of(const iob_opts *o, const iob_option *t[3])
{
    const iob_backend *be = o->backend ? iob_find_backend(o->backend) : NULL;
    const iob_pattern *pat = o->pattern ? iob_find_pattern(o->pattern) : NULL;
    t[0] = iob_driver_options, t[1] = be ? be->options : NULL, t[2] = pat ? pat->options : NULL;
}

static const iob_option *declared(const iob_opts *o, const char *key)
{
    const iob_option *t[3], *opt = NULL;
    tables_of(o, t);
    for (int i = 0; i < 3 && !opt; i++)
        opt = iob_option_find(t[i], key);
    if (!opt) { /* a key no table declares is read by code: a bug, not bad input */
        fprintf(stderr, "iobench: internal error: --param %s is in no option table\n", key);
        abort();
    }
    return opt;
}

/* Digits only (no sign, no blanks), then an optional k/m/g/t (SIZE); -1 on bad syntax or overflow. */
static int parse_number(const char *s, int suffix, int64_t *out)
{
    if (*s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = 0;
    if (suffix && *end) {
        const char *u = strchr("kmgt", *end | 0x20);
        if (!u || end[1])
            return -1;
        shift = 10 * (int)(u - "kmgt" + 1);
    } else if (*end) {
        return -1;
    }
    if (errno || v > (unsigned long long)INT64_MAX >> shift)
        return -1;
    *out = (int64_t)(v << shift);
    return 0;
}

/* 0 when v is acceptable for opt; its number in *out (INT, SIZE, BOOL). */
static int value_of(const iob_option *opt, const char *v, int64_t *out)
{
    int64_t x = 0, max = opt->max ? opt->max : INT64_MAX;
    switch (opt->type) {
    case IOB_OPT_BOOL:
        if (strcmp(v, "0") && strcmp(v, "1"))
            return -1;
        x = v[0] == '1';
        break;
    case IOB_OPT_INT:
    case IOB_OPT_SIZE:
        if (opt->special && strcmp(v, opt->special) == 0) {
            x = strtoll(v, NULL, 10);
            break;
        }
        if (parse_number(v, opt->type == IOB_OPT_SIZE, &x) || x < opt->min || x > max)
            return -1;
        break;
    case IOB_OPT_ENUM:
        if (!in_bars(opt->values, v))
            return -1;
        break;
    case IOB_OPT_STRING:
        if (opt->valid && !opt->valid(v))
            return -1;
        break;
    }
    if (out)
        *out = x;
    return 0;
}

/* What opt accepts, in words: "0 or 1", "an integer 1..100000", "-1 or an integer >= 1", ... */
static void allowed(const iob_option *opt, char *buf, size_t n)
{
    char range[64];
    if (opt->allowed) {
        snprintf(buf, n, "%s", opt->allowed);
        return;
    }
    if (opt->max)
        snprintf(range, sizeof range, "%lld..%lld", (long long)opt->min, (long long)opt->max);
    else
        snprintf(range, sizeof range, ">= %lld", (long long)opt->min);
    switch (opt->type) {
    case IOB_OPT_BOOL: snprintf(buf, n, "0 or 1"); break;
    case IOB_OPT_INT:
        snprintf(buf, n, "%s%san integer %s", opt->special ? opt->special : "", opt->special ? " or " : "", range);
        break;
    case IOB_OPT_SIZE: snprintf(buf, n, "bytes %s%s, suffix k/m/g/t", range, opt->max ? "" : " and below 2^63"); break;
    case IOB_OPT_ENUM: snprintf(buf, n, "%s", opt->values); break;
    case IOB_OPT_STRING: snprintf(buf, n, "passed on, the library checks it"); break;
    }
}

const char *iob_param_str(const iob_opts *o, const char *key)
{
    const iob_option *opt = declared(o, key);
    const char *v = iob_kv_get(&o->params, key);
    return v ? v : opt->dflt;
}

int64_t iob_param_int(const iob_opts *o, const char *key)
{
    const iob_option *opt = declared(o, key);
    const char *v = iob_param_str(o, key);
    int64_t x = 0;
    if (v && value_of(opt, v, &x) != 0) { /* checked at parse time; a bad default is a bug */
        fprintf(stderr, "iobench: internal error: --param %s value '%s' not checked\n", key, v);
        abort();
    }
    return x;
}

int iob_params_check(const iob_opts *o, char *err, size_t errlen)
{
    const iob_option *t[3];
    tables_of(o, t);
    for (int i = 0; i < o->params.n; i++) {
        const char *k = o->params.kv[i].key, *v = o->params.kv[i].value;
        const iob_option *opt = NULL;
        for (int w = 0; w < 3 && !opt; w++)
            opt = iob_option_find(t[w], k);
        if (!opt) {
            snprintf(err, errlen, "unknown --param key for backend %s and pattern %s (see --help) '%s'",
                     o->backend, o->pattern, k);
            return IOB_BADINPUT;
        }
        if (opt->modes && o->mode && !in_bars(opt->modes, o->mode)) {
            snprintf(err, errlen, "--param %s is not used by --mode %s of %s (only %s) '%s'", k, o->mode,
                     o->backend, opt->modes, k);
            return IOB_BADINPUT;
        }
        if (value_of(opt, v, NULL) != 0) {
            char what[160];
            allowed(opt, what, sizeof what);
            snprintf(err, errlen, "--param %s (%s) '%s'", k, what, v);
            return IOB_BADINPUT;
        }
    }
    return IOB_OK;
}

void iob_options_help(FILE *out, const iob_option *t)
{
    if (!t || !t->key) {
        fputs("    (no --param keys)\n", out);
        return;
    }
    for (; t->key; t++) {
        char head[96], what[160];
        snprintf(head, sizeof head, "%s%s%s", t->key, t->dflt ? "=" : "", t->dflt ? t->dflt : "");
        allowed(t, what, sizeof what);
        fprintf(out, "    %-22s %-30s %s%s%s%s\n", head, what, t->modes ? "[" : "", t->modes ? t->modes : "",
                t->modes ? "] " : "", t->help ? t->help : "");
    }
}
